// Every action a kind offers (#31 added many) is one the policy knows by name, so a rule can name it,
// and every kind has its defaults: a confirmation time, and an actuator a grouped tool name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ACTIONS_BY_KIND } from '../../src/devices/commands.js';
import { DEFAULT_CONFIRM_TIMEOUT_MS } from '../../src/devices/defaults.js';
import { ACTUATOR_KINDS, ENTITY_KINDS } from '../../src/devices/model.js';
import { KNOWN_ACTIONS } from '../../src/policy/rules.js';
import { groupedToolFor } from '../../src/tools/generator.js';

describe('kinds and their actions', () => {
  it('every action of every kind is a known policy action', () => {
    const missing = Object.entries(ACTIONS_BY_KIND).flatMap(([kind, actions]) => actions.filter((a) => !KNOWN_ACTIONS.includes(a)).map((a) => `${kind}.${a}`));
    assert.deepEqual(missing, []);
  });

  it('every kind has a confirmation time, and every actuator kind its actions and a grouped tool of its own', () => {
    for (const kind of ENTITY_KINDS) assert.ok(DEFAULT_CONFIRM_TIMEOUT_MS[kind] > 0, kind);
    for (const kind of ACTUATOR_KINDS) {
      assert.ok(ACTIONS_BY_KIND[kind]?.length, `${kind} has actions`);
      assert.notEqual(groupedToolFor(kind), 'get_state', `${kind} has a grouped tool`);
    }
  });
});
