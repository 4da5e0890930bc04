// The policy table against a real SQLite file: defaults, targets, precedence,
// time windows, rate limits, reloading, mayEverUse, rule management.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SqlitePolicy, DEFAULT_ACTUATE_REASON, DEFAULT_READ_REASON } from '../../src/policy/engine.js';
import { PolicyRuleError } from '../../src/policy/rules.js';
import { garageReq, localAt, lockReq, req, tempDb, type TempDb } from './helpers.js';

let t: TempDb;
let policy: SqlitePolicy;

beforeEach(() => {
  t = tempDb();
  policy = new SqlitePolicy(t.db);
});
afterEach(() => t.close());

const builtinId = (action: string) => policy.list().find((r) => r.builtin && r.action === action)!.id;

describe('defaults', () => {
  it('seeds the built-in rules', () => {
    const rules = policy.list();
    assert.equal(rules.length, 7);
    assert.ok(rules.every((r) => r.builtin));
    assert.deepEqual(
      rules.map((r) => [r.subject, r.targetType, r.target, r.action, r.effect, r.priority]),
      [
        ['*', 'any', '*', 'read', 'allow', -100],
        ['*', 'any', '*', 'actuate', 'deny', -100],
        ['*', 'kind', 'lock', 'unlock', 'confirm', 100],
        ['*', 'device_class', 'garage|door|gate', 'open|set_position', 'confirm', 100],
        ['*', 'kind', 'alarm_control_panel', 'disarm*', 'confirm', 100],
        ['*', 'kind', 'siren', 'turn_on|turn_off', 'confirm', 100],
        ['*', 'kind', 'update', 'install', 'confirm', 100],
      ],
    );
  });

  it('allows reads and denies actuators', () => {
    const read = policy.decide(req({ capability: 'read', action: 'read' }));
    assert.equal(read.effect, 'allow');
    assert.equal(read.ruleId, builtinId('read'));
    const act = policy.decide(req());
    assert.equal(act.effect, 'deny');
    assert.equal(act.ruleId, builtinId('actuate'));
    assert.match(act.reason, /^rule #2 \(\* may not actuate anything; built-in: actuators are denied unless a rule allows them\) denies$/);
  });

  it('falls back to the code default when no rule matches (ruleId null)', () => {
    for (const r of policy.list()) policy.remove(r.id);
    assert.deepEqual(policy.decide(req({ capability: 'read', action: 'read' })), { effect: 'allow', ruleId: null, reason: DEFAULT_READ_REASON });
    assert.deepEqual(policy.decide(req()), { effect: 'deny', ruleId: null, reason: DEFAULT_ACTUATE_REASON });
  });

  it('asks for confirmation to unlock, open a garage and disarm, even with an owner allow', () => {
    const allow = policy.add({ subject: 'role:owner', targetType: 'any', action: 'actuate', effect: 'allow', priority: 10 });
    const owner = { who: 'chat:olivia', roles: ['owner'] };
    const lamp = policy.decide(req(owner));
    assert.equal(lamp.effect, 'allow');
    assert.equal(lamp.ruleId, allow.id);
    assert.equal(lamp.reason, `rule #${allow.id} (role:owner may actuate anything) allows`);

    const unlock = policy.decide(lockReq(owner));
    assert.equal(unlock.effect, 'confirm');
    assert.equal(unlock.ruleId, 3);
    assert.match(unlock.reason, /requires confirmation$/);
    assert.equal(policy.decide(lockReq({ ...owner, action: 'lock' })).effect, 'allow');

    assert.equal(policy.decide(garageReq(owner)).effect, 'confirm');
    assert.equal(policy.decide(garageReq({ ...owner, action: 'set_position', args: { position: 100 } })).effect, 'confirm');
    assert.equal(policy.decide(garageReq({ ...owner, action: 'close' })).effect, 'allow');
    assert.equal(policy.decide(garageReq({ ...owner, deviceClass: 'Gate' })).effect, 'confirm');
    assert.equal(policy.decide(garageReq({ ...owner, deviceClass: 'blind' })).effect, 'allow');
    const alarm = { tool: 'alarm', entityId: 'alarm.panel', kind: 'alarm_control_panel', deviceClass: undefined, action: 'disarm' };
    assert.equal(policy.decide(req({ ...owner, ...alarm })).effect, 'confirm');
    assert.equal(policy.decide(req({ ...owner, ...alarm, action: 'arm_away' })).effect, 'allow');

    // The built-in confirm rules escalate an allow; they never turn a deny into a request.
    const guest = policy.decide(lockReq({ who: 'chat:guest' }));
    assert.equal(guest.effect, 'deny');
    assert.equal(guest.ruleId, 2, 'the built-in "actuators are denied" rule still decides for someone no rule allows');
    const noVoice = policy.add({ subject: 'voice:*', targetType: 'kind', target: 'lock', action: 'unlock', effect: 'deny', priority: 10 });
    const byVoice = policy.decide(lockReq({ who: 'voice:kitchen', roles: ['owner'] }));
    assert.deepEqual([byVoice.effect, byVoice.ruleId], ['deny', noVoice.id], 'an explicit deny beats the built-in confirm');

    // An explicit higher-priority allow waives the confirmation.
    policy.add({ subject: 'role:owner', targetType: 'kind', target: 'lock', action: 'unlock', effect: 'allow', priority: 101 });
    assert.equal(policy.decide(lockReq(owner)).effect, 'allow');
  });
});

describe('targets', () => {
  const bob = { who: 'chat:bob' };
  const cases: { name: string; rule: { targetType: string; target: string }; hit: Parameters<typeof req>[0]; miss: Parameters<typeof req>[0] }[] = [
    { name: 'tool', rule: { targetType: 'tool', target: 'living_*' }, hit: {}, miss: { tool: 'kitchen_lamp' } },
    { name: 'entity', rule: { targetType: 'entity', target: 'garage_*' }, hit: { entityId: 'garage_light.relay' }, miss: {} },
    { name: 'entity (absent)', rule: { targetType: 'entity', target: '*' }, hit: {}, miss: { entityId: undefined } },
    { name: 'area (case-insensitive)', rule: { targetType: 'area', target: 'kitchen' }, hit: { area: 'Kitchen' }, miss: {} },
    { name: 'area with a space', rule: { targetType: 'area', target: 'Living Room' }, hit: { area: 'living room' }, miss: { area: 'Living' } },
    { name: 'kind', rule: { targetType: 'kind', target: 'light' }, hit: {}, miss: { kind: 'switch' } },
    { name: 'device_class', rule: { targetType: 'device_class', target: 'awning' }, hit: { deviceClass: 'awning' }, miss: { deviceClass: 'blind' } },
    { name: 'capability', rule: { targetType: 'capability', target: 'actuator' }, hit: {}, miss: { capability: 'read', action: 'read' } },
    {
      name: 'any',
      rule: { targetType: 'any', target: '*' },
      hit: { tool: 'x', entityId: undefined, area: undefined, kind: undefined },
      miss: { who: 'chat:alice' },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      // `*` action so that the capability case can also be checked against a read (denied by this deny rule).
      const rule = policy.add({ subject: 'chat:bob', ...c.rule, action: '*', effect: 'deny', priority: 5 });
      policy.add({ subject: 'chat:*', targetType: 'any', action: '*', effect: 'allow', priority: 1 });
      const hit = policy.decide(req({ ...bob, ...c.hit }));
      assert.equal(hit.effect, 'deny', `${c.name} should match`);
      assert.equal(hit.ruleId, rule.id);
      const miss = policy.decide(req({ ...bob, ...c.miss }));
      assert.equal(miss.effect, 'allow', `${c.name} should not match: ${miss.reason}`);
    });
  }

  it('action patterns: read, actuate, a specific action, a glob, alternatives', () => {
    const who = { who: 'chat:bob' };
    policy.add({ subject: 'chat:bob', targetType: 'any', action: 'turn_*', effect: 'allow' });
    assert.equal(policy.decide(req({ ...who, action: 'turn_off' })).effect, 'allow');
    assert.equal(policy.decide(req({ ...who, action: 'set_value' })).effect, 'deny');
    policy.add({ subject: 'chat:bob', targetType: 'any', action: 'set_value|press', effect: 'allow' });
    assert.equal(policy.decide(req({ ...who, action: 'set_value' })).effect, 'allow');
    policy.add({ subject: 'chat:bob', targetType: 'any', action: 'read', effect: 'deny' });
    assert.equal(policy.decide(req({ ...who, capability: 'read', action: 'read' })).effect, 'deny');
    assert.equal(policy.decide(req({ ...who, action: 'press' })).effect, 'allow', 'read rule does not touch actuators');
  });

  it('subjects: exact id, glob, role, role from the principals table', () => {
    policy.add({ subject: 'voice:*', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow' });
    policy.add({ subject: 'role:family', targetType: 'area', target: 'Living Room', action: 'actuate', effect: 'allow' });
    assert.equal(policy.decide(req({ who: 'voice:kitchen' })).effect, 'allow');
    assert.equal(policy.decide(req({ who: 'chat:carol' })).effect, 'deny');
    assert.equal(policy.decide(req({ who: 'chat:carol', roles: ['family'] })).effect, 'allow');
    policy.setRoles('chat:carol', ['family', 'guest']);
    assert.deepEqual(policy.rolesOf('chat:carol'), ['family', 'guest']);
    assert.deepEqual(policy.rolesOf('chat:nobody'), []);
    assert.equal(policy.decide(req({ who: 'chat:carol' })).effect, 'allow', 'stored roles count');
    policy.setRoles('chat:carol', ['guest']);
    assert.equal(policy.decide(req({ who: 'chat:carol' })).effect, 'deny', 'role change invalidates the cache');
    assert.deepEqual(policy.principal('chat:carol'), { id: 'chat:carol', roles: ['guest'] });
  });
});

describe('precedence', () => {
  it('deny beats confirm beats allow at equal priority', () => {
    const allow = policy.add({ subject: '*', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', priority: 5 });
    assert.equal(policy.decide(req()).ruleId, allow.id);
    const confirm = policy.add({ subject: 'chat:alice', targetType: 'area', target: 'living room', action: 'turn_on', effect: 'confirm', priority: 5 });
    assert.deepEqual([policy.decide(req()).effect, policy.decide(req()).ruleId], ['confirm', confirm.id]);
    const deny = policy.add({ subject: 'chat:alice', targetType: 'tool', target: 'living_room_lamp', action: '*', effect: 'deny', priority: 5 });
    assert.deepEqual([policy.decide(req()).effect, policy.decide(req()).ruleId], ['deny', deny.id]);
  });

  it('higher priority wins whatever the effect', () => {
    policy.add({ subject: '*', targetType: 'kind', target: 'light', action: 'actuate', effect: 'deny', priority: 5 });
    const allow = policy.add({ subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', priority: 10 });
    assert.deepEqual(policy.decide(req()), { effect: 'allow', ruleId: allow.id, reason: `rule #${allow.id} (chat:alice may actuate kind light) allows` });
    policy.add({ subject: '*', targetType: 'any', action: '*', effect: 'deny', priority: 11, note: 'holiday lockdown' });
    const d = policy.decide(req());
    assert.equal(d.effect, 'deny');
    assert.match(d.reason, /may not do anything to anything; holiday lockdown\) denies/);
  });
});

describe('time', () => {
  it('a daytime window', () => {
    policy.add({ subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', window: '08:00-17:00' });
    assert.equal(policy.decide(req({ at: localAt('wed', '07:59') })).effect, 'deny');
    assert.equal(policy.decide(req({ at: localAt('wed', '08:00') })).effect, 'allow');
    assert.equal(policy.decide(req({ at: localAt('wed', '16:59') })).effect, 'allow');
    assert.equal(policy.decide(req({ at: localAt('wed', '17:00') })).effect, 'deny');
  });

  it('a window that wraps midnight', () => {
    policy.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow' });
    const quiet = policy.add({
      subject: 'chat:alice',
      targetType: 'kind',
      target: 'light',
      action: 'actuate',
      effect: 'deny',
      priority: 1,
      window: { start: '22:00', end: '06:00' },
    });
    assert.equal(policy.decide(req({ at: localAt('wed', '21:59') })).effect, 'allow');
    assert.equal(policy.decide(req({ at: localAt('wed', '22:00') })).ruleId, quiet.id);
    assert.equal(policy.decide(req({ at: localAt('wed', '23:30') })).effect, 'deny');
    assert.equal(policy.decide(req({ at: localAt('thu', '02:00') })).effect, 'deny');
    assert.equal(policy.decide(req({ at: localAt('thu', '05:59') })).effect, 'deny');
    assert.equal(policy.decide(req({ at: localAt('thu', '06:00') })).effect, 'allow');
    assert.equal(policy.decide(req({ at: localAt('thu', '12:00') })).effect, 'allow');
  });

  it('days, and a wrapping window belongs to the day it starts', () => {
    policy.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow', days: 'sat,sun' });
    assert.equal(policy.decide(req({ at: localAt('sat', '12:00') })).effect, 'allow');
    assert.equal(policy.decide(req({ at: localAt('sun', '23:59') })).effect, 'allow');
    assert.equal(policy.decide(req({ at: localAt('mon', '00:00') })).effect, 'deny');
    const party = policy.add({ subject: 'chat:bob', targetType: 'any', action: 'actuate', effect: 'allow', window: '22:00-06:00', days: 'fri' });
    assert.deepEqual(party.days, ['fri']);
    const bob = (day: Parameters<typeof localAt>[0], hhmm: string) => policy.decide(req({ who: 'chat:bob', at: localAt(day, hhmm) })).effect;
    assert.equal(bob('fri', '23:00'), 'allow');
    assert.equal(bob('sat', '02:00'), 'allow');
    assert.equal(bob('fri', '02:00'), 'deny');
    assert.equal(bob('sat', '23:00'), 'deny');
    const weekdays = policy.add({ subject: 'chat:dan', targetType: 'any', action: 'actuate', effect: 'allow', days: 'mon-fri' });
    assert.deepEqual(weekdays.days, ['mon', 'tue', 'wed', 'thu', 'fri']);
  });

  it('a time zone option', () => {
    const utc = new SqlitePolicy(t.db, { timeZone: 'UTC' });
    utc.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow', window: '08:00-09:00', days: 'mon' });
    assert.equal(utc.decide(req({ at: new Date('2024-01-01T08:30:00Z') })).effect, 'allow');
    assert.equal(utc.decide(req({ at: new Date('2024-01-01T09:30:00Z') })).effect, 'deny');
    assert.equal(utc.decide(req({ at: new Date('2024-01-02T08:30:00Z') })).effect, 'deny');
  });
});

describe('rate limits', () => {
  it('3 calls per 60 s: the 4th is denied, and the budget comes back', () => {
    const rule = policy.add({ subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', maxCalls: 3, perSeconds: 60 });
    const t0 = localAt('wed', '12:00');
    const at = (s: number) => new Date(t0.getTime() + s * 1000);
    for (const s of [0, 1]) assert.equal(policy.decide(req({ at: at(s) })).effect, 'allow', `call at ${s}s`);
    // explain does not use up budget.
    assert.equal(policy.explain(req({ at: at(2) })).decision.effect, 'allow');
    assert.equal(policy.decide(req({ at: at(2) })).effect, 'allow', 'third call');
    const ex = policy.explain(req({ at: at(3) }));
    assert.equal(ex.decision.effect, 'deny');
    assert.match(ex.rules.find((r) => r.rule.id === rule.id)!.why, /^matches, but rate limit: 3 calls per 60 s/);
    const fourth = policy.decide(req({ at: at(3) }));
    assert.deepEqual(fourth, { effect: 'deny', ruleId: rule.id, reason: `rate limit: 3 calls per 60 s (rule #${rule.id})` });
    // Another principal has its own budget.
    policy.add({ subject: 'chat:bob', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow' });
    assert.equal(policy.decide(req({ who: 'chat:bob', at: at(3) })).effect, 'allow');
    // Denied calls did not count: at 60.5 s the first call has left the window.
    assert.equal(policy.decide(req({ at: at(60.5) })).effect, 'allow');
    assert.equal(policy.decide(req({ at: at(60.6) })).effect, 'deny');
    assert.equal(policy.decide(req({ at: at(200) })).effect, 'allow');
  });

  it('survives a restart (hits are in the table)', () => {
    policy.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow', maxCalls: 2, perSeconds: 3600 });
    const at = localAt('wed', '12:00');
    policy.decide(req({ at }));
    policy.decide(req({ at }));
    t.db.close();
    const again = new SqlitePolicy(t.open());
    assert.match(again.decide(req({ at })).reason, /^rate limit: 2 calls per 3600 s/);
  });

  it('confirm rules check the budget; recordHit counts an approved call', () => {
    const rule = policy.add({
      subject: '*',
      targetType: 'kind',
      target: 'lock',
      action: 'unlock',
      effect: 'confirm',
      priority: 150,
      maxCalls: 1,
      perSeconds: 60,
    });
    const at = localAt('wed', '12:00');
    assert.equal(policy.decide(lockReq({ at })).effect, 'confirm');
    assert.equal(policy.decide(lockReq({ at })).effect, 'confirm', 'asking is free');
    policy.recordHit(rule.id, 'chat:alice', at);
    assert.equal(policy.decide(lockReq({ at })).effect, 'deny');
  });
});

describe('reloading', () => {
  it('a rule change invalidates cached decisions', () => {
    assert.equal(policy.decide(req()).effect, 'deny');
    assert.equal(policy.decide(req()).effect, 'deny');
    const rule = policy.add({ subject: 'chat:alice', targetType: 'entity', target: 'living_room.*', action: 'turn_on', effect: 'allow' });
    assert.equal(policy.decide(req()).effect, 'allow');
    const removed = policy.remove(rule.id);
    assert.deepEqual([removed.removed, removed.builtin], [true, false]);
    assert.equal(policy.decide(req()).effect, 'deny');
    assert.deepEqual(policy.remove(rule.id), { removed: false, builtin: false });
    assert.equal(policy.remove(builtinId('read')).builtin, true);
  });

  it('two engines on one connection see each other', () => {
    const other = new SqlitePolicy(t.db);
    assert.equal(policy.decide(req()).effect, 'deny');
    other.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow' });
    assert.equal(policy.decide(req()).effect, 'allow');
  });

  it('a rule added on a second connection is seen', () => {
    assert.equal(policy.decide(req()).effect, 'deny');
    const cli = new SqlitePolicy(t.open());
    const rule = cli.add({ subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow' });
    assert.equal(policy.decide(req()).ruleId, rule.id);
    // Raw SQL from another connection (a hand edit) too.
    t.open().prepare('UPDATE policy_rules SET effect = ? WHERE id = ?').run('deny', rule.id);
    assert.equal(policy.decide(req()).effect, 'deny');
    // Another connection's unrelated writes do not break anything.
    t.open().prepare('INSERT INTO rule_hits (rule_id, principal, at) VALUES (1, ?, 0)').run('x');
    assert.equal(policy.decide(req()).effect, 'deny');
  });

  it("one call's decisions (atOnce) see this connection's changes at once, another's from the next call", () => {
    const cli = new SqlitePolicy(t.open());
    policy.atOnce(() => {
      assert.equal(policy.decide(req()).effect, 'deny');
      const own = policy.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow' });
      assert.equal(policy.decide(req()).ruleId, own.id, 'its own write');
      policy.remove(own.id);
      assert.equal(policy.decide(req()).effect, 'deny');
    });
    policy.atOnce(() => {
      assert.equal(policy.decide(req()).effect, 'deny');
      cli.add({ subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow' });
      assert.equal(policy.decide(req()).effect, 'deny', 'the rules as at its start');
    });
    assert.equal(policy.decide(req()).effect, 'allow', 'the next call sees the other connection');
  });
});

describe('mayEverUse', () => {
  const lampMeta = {
    capability: 'actuator' as const,
    kinds: ['light'],
    entityIds: ['living_room.lamp'],
    areas: ['Living Room'],
    actions: ['turn_on', 'turn_off'],
    deviceClasses: [],
  };
  const sensorMeta = { capability: 'read' as const, kinds: ['sensor'], entityIds: ['office.temperature'], areas: ['Office'], actions: [], deviceClasses: [] };
  const guest = { id: 'chat:guest', roles: ['guest'] };

  it('a guest denied all actuation cannot use actuators, can still read', () => {
    policy.add({ subject: 'role:family|role:guest', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', priority: 0 });
    assert.equal(policy.mayEverUse(guest, 'living_room_lamp', lampMeta), true);
    policy.add({ subject: 'role:guest', targetType: 'any', action: 'actuate', effect: 'deny', priority: 50 });
    assert.equal(policy.mayEverUse(guest, 'living_room_lamp', lampMeta), false);
    assert.equal(policy.mayEverUse(guest, 'office_temperature', sensorMeta), true);
    assert.equal(policy.mayEverUse({ id: 'chat:fam', roles: ['family'] }, 'living_room_lamp', lampMeta), true);
    // A time-windowed allow that outranks the deny could apply some day: keep the tool.
    policy.add({
      subject: 'role:guest',
      targetType: 'tool',
      target: 'living_room_lamp',
      action: 'turn_on',
      effect: 'allow',
      priority: 60,
      window: '18:00-23:00',
    });
    assert.equal(policy.mayEverUse(guest, 'living_room_lamp', lampMeta), true);
  });

  it('actuators nothing allows are unusable; an unlock confirm keeps the lock', () => {
    const alice = { id: 'chat:alice', roles: [] };
    assert.equal(policy.mayEverUse(alice, 'living_room_lamp', lampMeta), false);
    const lockMeta = {
      capability: 'actuator' as const,
      kinds: ['lock'],
      entityIds: ['front_door.lock'],
      areas: ['Hall'],
      actions: ['lock', 'unlock'],
      deviceClasses: [],
    };
    // The built-in unlock confirm only escalates an allow: with none, the lock is never usable (issue 15).
    assert.equal(policy.mayEverUse(alice, 'front_door_lock', lockMeta), false, 'a built-in confirm is no way in');
    const lockRule = policy.add({ subject: 'chat:alice', targetType: 'kind', target: 'lock', action: 'lock', effect: 'allow' });
    assert.equal(policy.mayEverUse(alice, 'front_door_lock', lockMeta), true, 'an allow for one of its actions offers it');
    policy.remove(lockRule.id);
    // A deny that covers only some of a grouped tool's kinds does not hide it.
    policy.add({ subject: 'chat:alice', targetType: 'any', action: 'actuate', effect: 'allow' });
    policy.add({ subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'deny', priority: 5 });
    assert.equal(policy.mayEverUse(alice, 'living_room_lamp', lampMeta), false);
    assert.equal(policy.mayEverUse(alice, 'lights_and_plugs', { ...lampMeta, kinds: ['light', 'switch'] }), true);
    // A time-windowed deny never hides a tool.
    policy.add({ subject: 'chat:alice', targetType: 'kind', target: 'switch', action: 'actuate', effect: 'deny', priority: 5, window: '22:00-06:00' });
    assert.equal(policy.mayEverUse(alice, 'plug', { ...lampMeta, kinds: ['switch'] }), true);
    // With no rules at all, the defaults apply.
    for (const r of policy.list()) policy.remove(r.id);
    assert.equal(policy.mayEverUse(alice, 'living_room_lamp', lampMeta), false);
    assert.equal(policy.mayEverUse(alice, 'office_temperature', sensorMeta), true);
  });
});

describe('rule management', () => {
  it('validates every field, naming it', () => {
    const base = { subject: 'chat:alice', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow' };
    const bad: [Record<string, unknown>, string][] = [
      [{ subject: '' }, 'subject'],
      [{ subject: 'chat: alice' }, 'subject'],
      [{ subject: 'role:' }, 'subject'],
      [{ targetType: 'room' }, 'targetType'],
      [{ target: '' }, 'target'],
      [{ targetType: 'any', target: 'x' }, 'target'],
      [{ targetType: 'capability', target: 'write' }, 'target'],
      [{ action: 'explode' }, 'action'],
      [{ action: 'Turn On' }, 'action'],
      [{ effect: 'maybe' }, 'effect'],
      [{ priority: 1.5 }, 'priority'],
      [{ priority: '3' }, 'priority'],
      [{ window: '25:00-06:00' }, 'window.start'],
      [{ window: { start: '22:00', end: '6pm' } }, 'window.end'],
      [{ window: '08:00-08:00' }, 'window'],
      [{ window: 'evenings' }, 'window'],
      [{ days: 'monday,funday' }, 'days'],
      [{ days: 5 }, 'days'],
      [{ maxCalls: 3 }, 'perSeconds'],
      [{ perSeconds: 3 }, 'maxCalls'],
      [{ maxCalls: 0, perSeconds: 60 }, 'maxCalls'],
      [{ maxCalls: 3, perSeconds: -1 }, 'perSeconds'],
      [{ note: 5 }, 'note'],
      [{ colour: 'red' }, 'colour'],
    ];
    for (const [patch, field] of bad) {
      assert.throws(
        () => policy.add({ ...base, ...patch } as never),
        (err: unknown) => err instanceof PolicyRuleError && err.field === field && err.message.startsWith(`${field}: `),
        `${JSON.stringify(patch)} should fail on ${field}`,
      );
    }
    assert.equal(policy.list().length, 7, 'nothing was added');
  });

  it('normalises and stores every column', () => {
    const r = policy.add({
      subject: 'role:family',
      targetType: 'device-class',
      target: 'garage',
      action: 'open',
      effect: 'confirm',
      priority: 7,
      window: '7:30-09:00',
      days: ['Mon', 'tue'],
      maxCalls: 5,
      perSeconds: 3600,
      note: '  school run ',
    });
    assert.deepEqual(
      { ...r, createdAt: typeof r.createdAt, id: typeof r.id },
      {
        id: 'number',
        subject: 'role:family',
        targetType: 'device_class',
        target: 'garage',
        action: 'open',
        effect: 'confirm',
        priority: 7,
        window: { start: '07:30', end: '09:00' },
        days: ['mon', 'tue'],
        maxCalls: 5,
        perSeconds: 3600,
        note: 'school run',
        fromArea: null,
        createdAt: 'string',
        builtin: false,
      },
    );
    assert.deepEqual(policy.get(r.id), r);
    assert.equal(policy.describe(r), 'role:family must confirm to open device class garage between 07:30 and 09:00 on mon,tue, at most 5 calls per 3600 s');
  });

  it('explain lists every rule with why it matched or not', () => {
    const owner = policy.add({ subject: 'role:owner', targetType: 'kind', target: 'lock', action: 'actuate', effect: 'allow', priority: 10 });
    const ex = policy.explain(lockReq({ who: 'chat:olivia', roles: ['owner'], at: localAt('wed', '12:00') }));
    assert.equal(ex.decision.effect, 'confirm');
    assert.equal(ex.rules.length, 8);
    const why = Object.fromEntries(ex.rules.map((r) => [r.rule.id, r]));
    assert.equal(why[3].decided, true);
    assert.match(why[3].why, new RegExp(`^matches and decides: rule #${owner.id} allows the call, and this built-in rule still asks a person`));
    assert.equal(why[owner.id].matched, true);
    assert.match(why[owner.id].why, /^matches and would allow, but built-in rule #3 \(priority 100, confirm\) comes first and asks a person; it decides$/);
    assert.match(why[1].why, /action unlock does not match read/);
    assert.match(why[4].why, /the call has no device class/);
    assert.match(why[5].why, /kind lock does not match alarm_control_panel/);
    assert.deepEqual(ex.roles, ['owner']);
    policy.add({ subject: 'chat:bob', targetType: 'any', action: 'actuate', effect: 'allow', window: '22:00-06:00' });
    const ex2 = policy.explain(req({ who: 'chat:bob', at: localAt('wed', '12:00') }));
    assert.match(ex2.rules.find((r) => r.rule.subject === 'chat:bob')!.why, /not in force at 12:00 wed \(22:00-06:00\)/);
    assert.match(ex2.rules.find((r) => r.rule.id === 3)!.why, /subject|kind/);
  });
});

describe('explain names the deciding rule and why each other candidate lost', () => {
  it('a deny below the built-in confirm rule decides; the confirm rule is not said to take precedence', () => {
    // The report of issue 20: "#3 matches, but rule #3 (priority 100, confirm) takes precedence" when another rule decides.
    const deny = policy.add({ subject: 'chat:olivia', targetType: 'kind', target: 'lock', action: 'unlock', effect: 'deny', priority: 50 });
    const tieAllow = policy.add({ subject: '*', targetType: 'entity', target: 'front_door.*', action: 'actuate', effect: 'allow', priority: 50 });
    const lower = policy.add({ subject: 'role:owner', targetType: 'any', action: 'actuate', effect: 'allow', priority: 10 });
    const tieDeny = policy.add({ subject: '*', targetType: 'area', target: 'Hall', action: 'unlock', effect: 'deny', priority: 50 });
    const other = policy.add({ subject: 'chat:bob', targetType: 'kind', target: 'lock', action: 'actuate', effect: 'allow', priority: 300 });
    const ex = policy.explain(lockReq({ who: 'chat:olivia', roles: ['owner'], at: localAt('wed', '12:00') }));
    assert.equal(ex.decision.effect, 'deny');
    assert.equal(ex.decision.ruleId, deny.id);
    const why = Object.fromEntries(ex.rules.map((r) => [r.rule.id, r]));
    assert.deepEqual(
      ex.rules.filter((r) => r.decided).map((r) => r.rule.id),
      [deny.id],
    );
    assert.equal(why[deny.id].why, 'matches and decides');
    assert.equal(why[3].matched, true);
    assert.doesNotMatch(why[3].why, /rule #3/);
    assert.equal(
      why[3].why,
      `matches, but a built-in confirm rule only turns an allow into a request for approval; rule #${deny.id} (priority 50, deny) decides`,
    );
    assert.equal(why[tieDeny.id].why, `matches, but rule #${deny.id} decides: same priority 50 and effect deny, and #${deny.id} is the older rule (lower id)`);
    assert.equal(why[tieAllow.id].why, `matches, but rule #${deny.id} decides: same priority 50, and deny wins over allow (deny > confirm > allow)`);
    assert.equal(why[lower.id].why, `matches, but rule #${deny.id} decides: its priority 50 is higher than 10`);
    assert.equal(why[2].why, `matches, but rule #${deny.id} decides: its priority 50 is higher than -100`);
    assert.equal(why[other.id].matched, false);
    assert.equal(why[other.id].why, 'subject chat:bob does not match chat:olivia (roles: owner)');
    // Every rule that matched and did not decide names the rule that did.
    for (const r of ex.rules.filter((r) => r.matched && !r.decided)) assert.match(r.why, new RegExp(`rule #${deny.id} `));
  });

  it('with nothing allowing the unlock, the built-in confirm rule says the default decides', () => {
    for (const r of policy.list()) if (r.action === 'actuate') policy.remove(r.id);
    const ex = policy.explain(lockReq({ at: localAt('wed', '12:00') }));
    assert.equal(ex.decision.effect, 'deny');
    assert.equal(ex.decision.ruleId, null);
    assert.equal(
      ex.rules.find((r) => r.rule.id === 3)!.why,
      'matches, but a built-in confirm rule only asks a person about a call a rule allows; no rule does, so the default decides',
    );
  });
});

// Decision speed is measured in bench/policy-audit.ts against a same-run baseline, never asserted here.
