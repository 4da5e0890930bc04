// Issue 40: the dangerous-word check searched only the first 16 KiB of a payload while a discovered command template
// may render 256 KiB, so a number whose template padded {"state":"UNLOCK", ..., "pad":"x"*17000} was allowed as
// set_value and its UNLOCK sent. Every byte that is published is judged, and a payload too long or too deep to judge
// is refused, never passed. Real broker (aedes), real SQLite file, Home Assistant discovery.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { waitFor } from '../helpers/wait.js';

describe('security: a dangerous word anywhere in a payload is judged', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({ listen: ['t/#'] });
    // The attack as filed: the word first, then more padding than the old 16 KiB the check read.
    await home.publish('homeassistant/number/porch_keypad/config', {
      name: 'Porch keypad',
      unique_id: 'porch_keypad_1',
      command_topic: 't/porch_keypad/set',
      state_topic: 't/porch_keypad/state',
      command_template: `{"state":"UNLOCK","value":{{ value }},"pad":"{{ 'x' * 17000 }}"}`,
    });
    // Nested deeper than any payload is judged: not sent, whatever it says.
    await home.publish('homeassistant/number/shed_keypad/config', {
      name: 'Shed keypad',
      unique_id: 'shed_keypad_1',
      command_topic: 't/shed_keypad/set',
      state_topic: 't/shed_keypad/state',
      command_template: `{{ '[' * 70 }}"UNLOCK"{{ ']' * 70 }}`,
    });
    // The word as a key, not a value: a device whose firmware reads {"UNLOCK": 1} as an unlock.
    await home.publish('homeassistant/number/gate_keypad/config', {
      name: 'Gate keypad',
      unique_id: 'gate_keypad_1',
      command_topic: 't/gate_keypad/set',
      state_topic: 't/gate_keypad/state',
      command_template: `{"unlock": {{ value }}}`,
    });
    await waitFor('the three keypads', () => home.hearth.bridge.registry.entities().length === 3);
  });
  after(() => home?.close());

  it('a number whose padded template says UNLOCK is held to the rules for locks: it needs approval, and nothing is sent', async () => {
    home.clear();
    const keypad = home.entity('Porch keypad');
    const result = await home.call('Porch keypad', { value: 5 });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /^needs approval: .*unlocking needs a person to confirm/);
    const [row] = home.hearth.audit.list({ entityId: keypad.id, order: 'desc', limit: 1 });
    assert.equal(row.decision, 'confirm');
    assert.equal(row.action, 'unlock', 'judged as the unlock it sends, not as set_value');
    assert.deepEqual(home.received, [], 'nothing reached the broker');
  });

  it('a number whose payload has UNLOCK as a JSON key is held to the rules for locks too', async () => {
    home.clear();
    const keypad = home.entity('Gate keypad');
    const result = await home.call('Gate keypad', { value: 5 });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /^needs approval: .*unlocking needs a person to confirm/);
    const [row] = home.hearth.audit.list({ entityId: keypad.id, order: 'desc', limit: 1 });
    assert.equal(row.action, 'unlock');
    assert.deepEqual(home.received, [], 'nothing reached the broker');
  });

  it('a payload too deep to judge is refused with the reason, audited as denied, and not sent', async () => {
    home.clear();
    const keypad = home.entity('Shed keypad');
    const result = await home.call('Shed keypad', { value: 5 });
    assert.equal(result.isError, true, result.text);
    assert.match(result.text!, /nests deeper than 64 levels, too deep to judge for dangerous words/);
    const [row] = home.hearth.audit.list({ entityId: keypad.id, order: 'desc', limit: 1 });
    assert.equal(row.decision, 'deny');
    assert.equal(row.outcome, 'denied');
    assert.match(row.reason, /too deep to judge/);
    assert.deepEqual(home.received, [], 'nothing reached the broker');
  });
});
