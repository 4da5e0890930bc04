// #31's kinds render Home Assistant templates: a siren's and a humidifier's per call, a mower's at discovery, an
// update's and an event's on every message. A template that loops or blows up is stopped by the render budget
// wherever it runs: the call fails with the reason, is audited with that outcome, and sends nothing; a reading is
// skipped with a log line; the rest of the home is served. Real broker (aedes), real SQLite, HA discovery.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

const LOOP = '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}';
const BLOW_UP = "{{ 'x' * 100000000 }}";

describe('security: templates of the new kinds are bounded', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({ listen: ['t/#'], flags: { 'tools.shape': 'grouped' } });
    await home.publish('homeassistant/siren/s/config', { name: 'Yard siren', unique_id: 'yard_siren', command_topic: 't/siren', command_template: LOOP });
    await home.publish('homeassistant/humidifier/h/config', {
      name: 'Nursery humidifier',
      unique_id: 'nursery_hum',
      command_topic: 't/hum',
      target_humidity_command_topic: 't/hum/target',
      target_humidity_command_template: BLOW_UP,
    });
    await home.publish('homeassistant/lawn_mower/m/config', {
      name: 'Mower',
      unique_id: 'mower',
      start_mowing_command_topic: 't/mow',
      start_mowing_command_template: LOOP,
      dock_command_topic: 't/dock',
    });
    await home.publish('homeassistant/update/u/config', { name: 'Hub firmware', unique_id: 'hub_fw', state_topic: 't/fw', value_template: LOOP });
    await home.publish('homeassistant/sensor/x/config', { name: 'Shed temperature', unique_id: 'shed', state_topic: 't/shed' });
    await waitFor('the five entities', () => home.hearth.bridge.registry.entities().length === 5);
  });
  after(() => home?.close());

  it('a call whose template loops or blows up fails with the reason, is audited as not sent, and sends nothing', async () => {
    home.clear();
    const approved = { approvalId: 'the owner said yes', approvedBy: OWNER };
    const siren = await home.hearth.tools.call('control_sirens', { entity: home.entity('Yard siren').id, action: 'turn_on' }, OWNER, approved);
    assert.equal(siren.isError, true);
    assert.match(siren.text!, /command template cannot render turn_on: range\(\) longer than/);
    const hum = await home.hearth.tools.call(
      'control_humidifiers',
      { entity: home.entity('Nursery humidifier').id, action: 'set_humidity', humidity: 40 },
      OWNER,
    );
    assert.equal(hum.isError, true);
    assert.match(hum.text!, /would be too long/);
    for (const name of ['Yard siren', 'Nursery humidifier']) {
      const [row] = home.hearth.audit.list({ entityId: home.entity(name).id, order: 'desc', limit: 1 });
      assert.equal(row.outcome, 'not_sent', name);
    }
    assert.deepEqual(home.received, []);
  });

  it("a mower's command whose template cannot render is left out at discovery; the rest of it stays", () => {
    const mower = home.entity('Mower');
    assert.deepEqual(Object.keys(mower.commandTopics), ['dock']);
    assert.ok(home.logs.lines.some((l) => /start_mowing_command template .* failed: range\(\) longer than/.test(l.msg)));
  });

  it("an update's reading whose template loops is skipped with a log line, and the home is still read", async () => {
    await home.device.publishAsync('t/fw', '1.2.3');
    await home.device.publishAsync('t/shed', '12.5');
    await waitFor('the shed reading', () => home.hearth.bridge.cache.get(home.entity('Shed temperature').id)?.value === 12.5);
    await waitFor('the skipped reading', () => home.logs.lines.find((l) => l.topic === 't/fw' && /range\(\) longer than/.test(l.msg)));
    assert.equal(home.hearth.bridge.cache.get(home.entity('Hub firmware').id)?.value, undefined);
  });
});
