// The grouped call ("all lights off") end to end: a real broker, simulated
// lights on devices of their own, a real SQLite file. Each member is judged
// and audited as its own call would be, and nothing the caller may not read
// is acted on or named.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import type { Entity } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import { GROUP_MAX_MEMBERS, selectGroup } from '../../src/tools/group-call.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import type { Principal } from '../../src/tools/types.js';
import { brokerKinds, type TestBroker } from '../helpers/brokers.js';
import { OWNER, openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

/** Six dimmable lights (Kitchen x3, Bedroom and Study upstairs), a plain-switch "lamp" and a fan. */
function deviceFile(): string {
  const lights = [
    ['k1', 'Kitchen ceiling', 'Kitchen', undefined],
    ['k2', 'Kitchen counter', 'Kitchen', undefined],
    ['k3', 'Kitchen pendant', 'Kitchen', undefined],
    ['b1', 'Bedroom light', 'Bedroom', 'Upstairs'],
    ['b2', 'Bedside light', 'Bedroom', 'Upstairs'],
    ['s1', 'Study light', 'Study', 'Upstairs'],
  ] as const;
  const lines = ['devices:'];
  for (const [id, name, area, floor] of lights) {
    lines.push(
      `  - id: ${id}`,
      `    name: ${name}`,
      `    area: ${area}`,
      ...(floor ? [`    floor: ${floor}`] : []),
      '    entities:',
      '      light:',
      '        kind: light',
      `        state_topic: grp/${id}`,
      '        value_path: state',
      '        attributes: { brightness: brightness }',
      `        command_topic: grp/${id}/set`,
      '        command_format: json',
      '        ranges: { brightness: { min: 0, max: 254, step: 1 } }',
    );
  }
  lines.push(
    '  - id: plug',
    '    name: Kitchen plug',
    '    area: Kitchen',
    '    entities:',
    '      switch: { kind: switch, name: Kitchen plug, state_topic: grp/plug/state, command_topic: grp/plug/set }',
  );
  return `${lines.join('\n')}\n`;
}

const KITCHEN = ['k1.light', 'k2.light', 'k3.light'];
const ALL_LIGHTS = ['b1.light', 'b2.light', 'k1.light', 'k2.light', 'k3.light', 's1.light'];

describe('grouped call: choosing the members', () => {
  const light = (i: number, area: string): Entity =>
    ({
      id: `l${i}.light`,
      key: 'light',
      kind: 'light',
      name: `Light ${i}`,
      aliases: [],
      area,
      deviceId: `l${i}`,
      attributes: {},
      ranges: {},
      options: {},
    }) as unknown as Entity;
  it('a call over more than GROUP_MAX_MEMBERS devices is refused, naming how to narrow it', () => {
    const home = Array.from({ length: GROUP_MAX_MEMBERS + 1 }, (_, i) => light(i, i % 2 ? 'Hall' : 'Barn'));
    assert.match(String(selectGroup({ action: 'turn_off' }, home)), /^201 lights match, more than 200 in one call; narrow it by "area", "floor" or "kind"$/);
    const barn = selectGroup({ action: 'turn_off', area: 'barn' }, home);
    assert.ok(Array.isArray(barn) && barn.length === 101);
  });
});

for (const { kind, start } of brokerKinds) {
  describe(`grouped call on ${kind}`, () => {
    let broker: TestBroker;
    let hearth: Hearth;
    let sim: Simulator;
    let dir: string;
    let n = 0;
    const call = (args: Record<string, unknown>, principal: Principal = OWNER) =>
      hearth.tools.call('control_group', args, principal, { requestId: `grp-${kind}-${++n}` });
    const value = (id: string) => hearth.bridge.cache.get(id)?.value;

    before(async () => {
      broker = await start();
      dir = mkdtempSync(join(tmpdir(), 'hearth-group-'));
      mkdirSync(join(dir, 'devices'));
      writeFileSync(join(dir, 'devices', 'home.yaml'), deviceFile());
      const logs = logSink('warn');
      hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'devices.paths': [join(dir, 'devices')] });
      sim = await startSimulator({ url: broker.url, devices: hearth.bridge.registry.devices(), log: logs.log.child({ part: 'sim' }) });
      await hearth.bridge.settle(5000);
      await waitFor('every entity has state', () => hearth.bridge.registry.entities().every((e) => hearth.bridge.cache.get(e.id)?.value !== undefined), 5000);
    });
    after(async () => {
      await sim?.close().catch(() => undefined);
      await hearth?.close();
      await broker?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('is offered for the home, with the kinds it has', () => {
      const tool = hearth.tools.get('control_group')!;
      assert.equal(tool.capability, 'actuator');
      assert.deepEqual(tool.meta.actions, ['turn_on', 'turn_off']);
      const props = (tool.parameters as { properties: Record<string, { enum?: string[] }> }).properties;
      assert.deepEqual(props.kind!.enum, ['light', 'switch', 'all']);
      assert.ok(props.floor && props.brightness_pct, 'floor and brightness are offered where the home has them');
    });

    it('turns on every light upstairs at a brightness, then all lights off: one confirmed row per light', async () => {
      const before = hearth.audit.tail(1)[0]?.id ?? 0;
      const commits = hearth.audit.pendingCommits;
      const up = await call({ action: 'turn_on', floor: 'upstairs', brightness_pct: 50 });
      assert.equal(up.isError, undefined, up.text);
      assert.match(up.text!, /^confirmed: turned on all 3 lights on "upstairs", each confirmed by its device\.$/);
      for (const id of ['b1.light', 'b2.light', 's1.light']) {
        assert.equal(value(id), 'on');
        assert.equal(hearth.bridge.cache.get(id)!.attributes.brightness, 127);
      }
      assert.equal(value('k1.light'), 'off', 'downstairs untouched');
      const off = await call({ action: 'turn_off' });
      assert.match(off.text!, /^confirmed: turned off all 6 lights, each confirmed by its device\.$/);
      assert.equal(value('plug.switch'), 'off');
      assert.ok(ALL_LIGHTS.every((id) => value(id) === 'off'));
      assert.ok(hearth.audit.pendingCommits - commits <= 4, 'the pending rows of a call share their commits');
      const rows = hearth.audit.list({ limit: 100 }).filter((r) => r.id > before);
      assert.deepEqual(
        rows.map((r) => [r.entityId, r.action, r.outcome]).sort(),
        [...['b1.light', 'b2.light', 's1.light'].map((id) => [id, 'turn_on', 'confirmed']), ...ALL_LIGHTS.map((id) => [id, 'turn_off', 'confirmed'])].sort(),
      );
      const k1 = hearth.audit.list({ entityId: 'k1.light', limit: 5 })[0]!;
      assert.equal(k1.requestId, `grp-${kind}-2#k1.light`, 'each row is tied to the grouped call by its request id');
      assert.equal(k1.tool, 'control_group');
      assert.deepEqual(k1.args, { action: 'turn_off', entity: 'k1.light' });
      assert.deepEqual(hearth.audit.list({ entityId: 'b1.light', limit: 5 }).find((r) => r.action === 'turn_on')!.args, {
        action: 'turn_on',
        // As the call said it (the device got 127 of 254, above): the audit speaks the tool's percent.
        brightness_pct: 50,
        entity: 'b1.light',
      });
      const details = off.details as { members: Array<{ entity: string; outcome: string; auditId: number }> };
      assert.deepEqual(
        details.members.map((m) => m.outcome),
        Array(6).fill('confirmed'),
      );
    });

    it('keeps per-device order: two grouped calls at once reach every light, and its rows, in the order they were made', async () => {
      const watcher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
      const seen = new Map<string, string[]>();
      watcher.on('message', (topic, payload) => {
        const id = topic.split('/')[1]!;
        seen.set(id, [...(seen.get(id) ?? []), String(JSON.parse(payload.toString()).state)]);
      });
      await watcher.subscribeAsync('grp/+/set', { qos: 1 });
      try {
        const [on, off] = await Promise.all([call({ action: 'turn_on' }), call({ action: 'turn_off' })]);
        assert.match(on.text!, /^confirmed: /);
        assert.match(off.text!, /^confirmed: /);
        await waitFor('every command seen', () => ALL_LIGHTS.every((id) => (seen.get(id.split('.')[0]!) ?? []).length === 2), 5000);
        for (const id of ALL_LIGHTS) {
          assert.deepEqual(seen.get(id.split('.')[0]!), ['ON', 'OFF'], id);
          const ids = [on, off].map(
            (r) => (r.details as { members: Array<{ entity: string; auditId: number }> }).members.find((m) => m.entity === id)!.auditId,
          );
          assert.ok(ids[0]! < ids[1]!, `${id}: the on row comes before the off row`);
          assert.equal(value(id), 'off');
        }
      } finally {
        await watcher.endAsync(true);
      }
    });

    it('a retried request id sends nothing again', async () => {
      const sent = n;
      const first = await call({ action: 'turn_on', area: 'Kitchen' });
      assert.match(first.text!, /^confirmed: turned on all 3 lights in "Kitchen"/);
      const again = await hearth.tools.call('control_group', { action: 'turn_on', area: 'Kitchen' }, OWNER, { requestId: `grp-${kind}-${sent + 1}` });
      assert.match(again.text!, /3 already handled by this request id, not sent again/);
      await call({ action: 'turn_off', area: 'kitchen' });
    });

    it('a deny rule skips only its light, a confirm rule holds only its light', async () => {
      const deny = hearth.policy.add({ subject: 'role:owner', targetType: 'entity', target: 'k2.light', action: 'actuate', effect: 'deny', priority: 10 });
      const confirm = hearth.policy.add({
        subject: 'role:owner',
        targetType: 'entity',
        target: 'k3.light',
        action: 'actuate',
        effect: 'confirm',
        priority: 10,
      });
      try {
        const res = await call({ action: 'turn_on', area: 'kitchen' });
        assert.equal(res.isError, undefined);
        assert.match(res.text!, /^partly done: turned on 1 of 3 lights in "kitchen"/);
        assert.match(res.text!, /\n1 needs approval, nothing sent: "Kitchen pendant" \(.*Approval [0-9a-f]+ is waiting/);
        assert.match(res.text!, new RegExp(`\\n1 not allowed, nothing sent: "Kitchen counter" \\(rule #${deny.id}`));
        assert.equal(value('k1.light'), 'on');
        assert.equal(value('k2.light'), 'off');
        assert.equal(value('k3.light'), 'off');
        const rid = `grp-${kind}-${n}`;
        const byEntity = (id: string) => hearth.audit.byRequestId(`${rid}#${id}`)!;
        assert.equal(byEntity('k1.light').outcome, 'confirmed');
        assert.equal(byEntity('k2.light').outcome, 'denied');
        assert.equal(byEntity('k2.light').ruleId, deny.id);
        assert.equal(byEntity('k3.light').outcome, 'denied');
        assert.equal(byEntity('k3.light').decision, 'confirm');
        // Granted, the same call again acts on the held light (the denied one stays off).
        const approvalId = (res.details as { members: Array<{ entity: string; approvalId?: string }> }).members.find((m) => m.entity === 'k3.light')!
          .approvalId!;
        assert.ok(hearth.approvals.grant(approvalId, 'cli:test-person'));
        const again = await call({ action: 'turn_on', area: 'kitchen' });
        assert.match(again.text!, /^partly done: turned on 2 of 3 lights/);
        assert.equal(value('k3.light'), 'on');
        assert.equal(value('k2.light'), 'off');
      } finally {
        hearth.policy.remove(deny.id);
        hearth.policy.remove(confirm.id);
      }
      assert.match((await call({ action: 'turn_off', area: 'kitchen' })).text!, /^confirmed: turned off all 3 lights/);
    });

    it("a rule on a member's own tool binds it in a grouped call too", async () => {
      const own = hearth.tools.all().find((t) => t.capability === 'actuator' && !t.meta.group && t.meta.entityIds.includes('k1.light'))!.name;
      const deny = hearth.policy.add({ subject: 'role:owner', targetType: 'tool', target: own, action: 'actuate', effect: 'deny', priority: 10 });
      try {
        const res = await call({ action: 'turn_on', area: 'Kitchen' });
        assert.match(res.text!, /^partly done: turned on 2 of 3 lights in "Kitchen"/);
        assert.match(res.text!, new RegExp(`\\n1 not allowed, nothing sent: "Kitchen ceiling" \\(rule #${deny.id}`));
        assert.equal(value('k1.light'), 'off');
        assert.equal(hearth.audit.byRequestId(`grp-${kind}-${n}#k1.light`)!.outcome, 'denied');
      } finally {
        hearth.policy.remove(deny.id);
      }
      await call({ action: 'turn_off', area: 'Kitchen' });
    });

    it('never acts on or names what the caller may not read', async () => {
      const kid: Principal = { id: 'chat:kid', roles: [] };
      const rules = [
        hearth.policy.add({ subject: kid.id, targetType: 'any', target: '*', action: 'actuate', effect: 'allow' }),
        hearth.policy.add({ subject: kid.id, targetType: 'entity', target: 'b2.light', action: 'read', effect: 'deny', priority: 10 }),
      ];
      try {
        const res = await call({ action: 'turn_on', area: 'Bedroom' }, kid);
        assert.match(res.text!, /^confirmed: turned on the one light in "Bedroom", each confirmed by its device\.$/);
        assert.doesNotMatch(JSON.stringify(res), /Bedside|b2\.light/);
        assert.equal(value('b2.light'), 'off');
        const named = await call({ action: 'turn_on', entities: ['b1.light', 'b2.light'] }, kid);
        assert.equal(named.isError, true);
        assert.match(named.text!, /^invalid arguments: "entities\[1\]": unknown entity "b2\.light"/);
        await call({ action: 'turn_off', area: 'Bedroom' }, kid);
        // Nobody allowed anything: the whole call is refused, as a lone call is, and each member has its denied row.
        const stranger = await call({ action: 'turn_on', area: 'Kitchen' }, { id: 'chat:stranger', roles: [] });
        assert.equal(stranger.isError, true);
        assert.match(stranger.text!, /^not allowed: none of the 3 lights in "Kitchen" was turned on; nothing was sent\.\n3 not allowed, nothing sent: /);
        assert.deepEqual(
          KITCHEN.map((id) => hearth.audit.byRequestId(`grp-${kind}-${n}#${id}`)?.outcome),
          ['denied', 'denied', 'denied'],
        );
      } finally {
        for (const r of rules) hearth.policy.remove(r.id);
      }
    });

    it('bad arguments are failed results naming the field, and nothing is sent', async () => {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ action: 'turn_off', area: 'Attic' }, /^invalid arguments: "area": no area "Attic"; areas are "Bedroom", "Kitchen", "Study"/],
        [{ action: 'turn_off', floor: 'Cellar' }, /^invalid arguments: "floor": no floor "Cellar"; floors are "Upstairs"/],
        [{ action: 'turn_off', kind: 'lock' }, /^invalid arguments: "kind" must be one of "light", "switch", "all" \(got "lock"\)/],
        [{ action: 'explode' }, /^invalid arguments: "action" must be one of "turn_on", "turn_off" \(got "explode"\)/],
        [{}, /^invalid arguments: arguments must have required property 'action'|"action"/],
        [{ action: 'turn_off', entities: ['nope.light'] }, /^invalid arguments: "entities\[0\]": unknown entity "nope\.light"/],
        [{ action: 'turn_off', entities: ['plug.switch'] }, /^invalid arguments: "entities\[0\]": "Kitchen plug" is a switch, not a light/],
        [{ action: 'turn_off', area: 'Study', kind: 'switch' }, /^invalid arguments: no switches match in "Study"/],
        [{ action: 'turn_off', brightness_pct: 50 }, /^invalid arguments: "brightness_pct" goes only with turn_on/],
        [{ action: 'turn_off', surprise: 1 }, /^invalid arguments: .*surprise/],
      ];
      const sets = () => hearth.audit.list({ limit: 1000 }).length;
      for (const [args, want] of cases) {
        const before = sets();
        const res = await call(args);
        assert.equal(res.isError, true, JSON.stringify(args));
        assert.match(res.text!, want, JSON.stringify(args));
        assert.ok(sets() > before, `the refused call is in the audit: ${JSON.stringify(args)}`);
      }
      assert.ok(
        ALL_LIGHTS.every((id) => value(id) === 'off'),
        'nothing was sent',
      );
    });

    it('the hash chain verifies after all of it', () => {
      const v = hearth.audit.verify();
      assert.equal(v.ok, true, JSON.stringify(v));
    });
  });
}
