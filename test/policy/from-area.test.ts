// A rule with from_area matches only calls whose principal speaks from that
// area (a satellite's or a token's), not the device's area.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { PolicyRuleError } from '../../src/policy/rules.js';
import { req, tempDb, type TempDb } from './helpers.js';

describe('policy: from_area', () => {
  let t: TempDb;
  let policy: SqlitePolicy;
  const garage = {
    tool: 'garage_door',
    capability: 'actuator' as const,
    action: 'open',
    entityId: 'garage_door.door',
    area: 'Garage',
    kind: 'cover',
    deviceClass: 'garage',
  };
  const from = (area?: string) => req({ ...garage, principal: { id: 'voice:sat', roles: ['family'], ...(area ? { area } : {}) } });

  before(() => {
    t = tempDb();
    policy = new SqlitePolicy(t.db);
    policy.add({ subject: 'role:family', targetType: 'device_class', target: 'garage', action: 'open', effect: 'allow', priority: 101, fromArea: 'Hallway' });
  });
  after(() => t.close());

  it('allows from the named area (case-insensitive), denies from another area or from none', () => {
    assert.equal(policy.decide(from('Hallway')).effect, 'allow');
    assert.equal(policy.decide(from('hallway')).effect, 'allow');
    const kitchen = policy.decide(from('Kitchen'));
    assert.equal(kitchen.effect, 'deny');
    assert.equal(kitchen.ruleId !== null && policy.get(kitchen.ruleId)?.builtin, true, 'the built-in default decided, not the from_area rule');
    assert.equal(policy.decide(from()).effect, 'deny');
  });

  it('explains why a from_area rule did not match, and says the area in the rule text', () => {
    const ex = policy.explain(from('Kitchen'));
    const mine = ex.rules.find((c) => c.rule.fromArea === 'Hallway')!;
    assert.equal(mine.matched, false);
    assert.equal(mine.why, 'the call comes from area Kitchen, not Hallway');
    assert.match(mine.description, /from area Hallway$/);
    assert.equal(policy.explain(from()).rules.find((c) => c.rule.fromArea)!.why, 'the call comes from no area (the rule wants Hallway)');
  });

  it('leaves a tool out of the tool set only for principals in the area a deny names', () => {
    const meta = {
      capability: 'actuator' as const,
      kinds: ['cover'],
      entityIds: ['garage_door.door'],
      areas: ['Garage'],
      actions: ['open'],
      deviceClasses: ['garage'],
    };
    const deny = policy.add({ subject: 'role:family', targetType: 'any', action: 'actuate', effect: 'deny', priority: 500, fromArea: 'Kitchen' });
    try {
      assert.equal(policy.mayEverUse({ id: 'voice:sat', roles: ['family'], area: 'Hallway' }, 'garage_door', meta), true);
      assert.equal(policy.mayEverUse({ id: 'voice:sat', roles: ['family'], area: 'Kitchen' }, 'garage_door', meta), false);
      assert.equal(policy.decide(from('Kitchen')).ruleId, deny.id);
    } finally {
      policy.remove(deny.id);
    }
  });

  it('refuses a bad from_area, naming the field', () => {
    assert.throws(
      () => policy.add({ subject: '*', targetType: 'any', effect: 'deny', fromArea: '' }),
      (err: unknown) => err instanceof PolicyRuleError && err.field === 'fromArea',
    );
    assert.throws(
      () => policy.add({ subject: '*', targetType: 'any', effect: 'deny', fromArea: 'Hall<way>' }),
      (err: unknown) => err instanceof PolicyRuleError && err.field === 'fromArea',
    );
  });
});
