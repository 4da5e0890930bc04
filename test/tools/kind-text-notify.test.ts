// Text and notify (#31): a message to a display or a speaker is the call's argument, bounded in length,
// sent as it is (through the entity's command template) and recorded in the audit; on a real broker.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { waitFor } from '../helpers/wait.js';

describe('text and notify kinds', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({
      listen: ['panel/+/set', 'speaker/say'],
      respond: (topic, payload) => (topic === 'panel/text/set' ? [['panel/text', payload]] : undefined),
      flags: { 'discovery.zigbee2mqtt.enabled': false },
    });
    await home.publish('homeassistant/text/panel/config', {
      name: 'Hall display',
      unique_id: 'hall_display',
      command_topic: 'panel/text/set',
      state_topic: 'panel/text',
      max: 20,
    });
    await home.publish('homeassistant/text/pin/config', { name: 'Alarm PIN', unique_id: 'alarm_pin', command_topic: 'panel/pin/set', mode: 'password' });
    await home.publish('homeassistant/notify/speaker/config', {
      name: 'Kitchen speaker',
      unique_id: 'kitchen_speaker',
      command_topic: 'speaker/say',
      command_template: '{"say": "{{ value }}"}',
    });
    await waitFor('both', () => ['Hall display', 'Kitchen speaker'].every((n) => home.hearth.bridge.registry.entities().some((e) => e.name === n)));
  });
  after(() => home?.close());

  it('a text is set, confirmed by the text it reports; its own max length bounds the argument', async () => {
    home.clear();
    assert.match((await home.call('Hall display', { text: 'Dinner at 7' })).text!, /^confirmed: .*text "Dinner at 7"/);
    assert.deepEqual(home.received, [{ topic: 'panel/text/set', payload: 'Dinner at 7' }]);
    home.clear();
    const long = await home.call('Hall display', { text: 'x'.repeat(21) });
    assert.equal(long.isError, true);
    assert.deepEqual(home.received, []);
  });

  it('a password text gives no tool: its value is a secret', () => {
    assert.equal(
      home.hearth.bridge.registry.entities().some((e) => e.name === 'Alarm PIN'),
      false,
    );
  });

  it('a message goes through the template, is done once sent, and the audit records its text', async () => {
    home.clear();
    const result = await home.call('Kitchen speaker', { message: 'The laundry is done' });
    assert.match(result.text!, /^confirmed: sent the message to .*Kitchen speaker/);
    await waitFor('the message', () => home.received.length > 0);
    assert.deepEqual(home.received, [{ topic: 'speaker/say', payload: '{"say": "The laundry is done"}' }]);
    const [row] = home.hearth.audit.tail(1);
    assert.equal(row!.action, 'send_message');
    assert.equal(row!.outcome, 'confirmed');
    assert.match(JSON.stringify(row!.args), /The laundry is done/);
  });

  it('an empty, over-long or control-character message is refused before sending', async () => {
    home.clear();
    for (const message of ['', 'x'.repeat(1001), 'bell\u0007']) {
      const r = await home.call('Kitchen speaker', { message });
      assert.equal(r.isError, true, JSON.stringify(message.slice(0, 10)));
    }
    assert.deepEqual(home.received, []);
  });
});
