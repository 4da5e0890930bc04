// Presence, events and firmware updates (#31), from the payloads their sources really send, on a real
// broker: "is anyone home?", "when did the doorbell last ring?", "are there firmware updates?".
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

const CASES = join(import.meta.dirname, '..', 'fixtures', 'ha-discovery');
const fixture = (name: string) => JSON.parse(readFileSync(join(CASES, name), 'utf8')) as { topic: string; payload: unknown };

describe('device tracker, event and update kinds', () => {
  let home: DiscoveredHome;
  const read = async (name: string) => (await home.hearth.tools.call('get_state', { entity: home.entity(name).id }, OWNER)).text!;
  const value = (name: string) => home.hearth.bridge.cache.get(home.entity(name).id)?.value;

  before(async () => {
    home = await openDiscoveredHome({
      listen: ['router/fw/install'],
      respond: (topic) =>
        topic === 'router/fw/install'
          ? [['router/fw/state', JSON.stringify({ installed_version: '1.0', latest_version: '1.1', in_progress: true })]]
          : undefined,
      flags: { 'discovery.zigbee2mqtt.enabled': false },
    });
    // The built-in rules ask a person before a update acts, even for owners (migration 0015); an allow above
    // priority 100 lets the test's owner act without one, as `hearth policy allow --priority 101` would.
    home.hearth.policy.add({ subject: 'role:owner', targetType: 'kind', target: 'update', action: '*', effect: 'allow', priority: 101, note: 'test' });
    await home.publish('homeassistant/device_tracker/anna/config', { name: 'Anna phone', unique_id: 'anna_phone', state_topic: 'presence/anna' });
    // Real discovery messages: Shelly's button events (a template that renders JSON only for its input) and Zigbee2MQTT's update.
    for (const name of ['shelly-event-1.json', 'z2m-update-1.json']) {
      const c = fixture(name);
      await home.publish(c.topic, typeof c.payload === 'string' ? c.payload : JSON.stringify(c.payload));
    }
    await home.publish('homeassistant/update/router/config', {
      name: 'Router firmware',
      unique_id: 'router_fw',
      state_topic: 'router/fw/state',
      command_topic: 'router/fw/install',
      payload_install: 'install',
    });
    await home.publish('zigbee2mqtt/bridge/state', { state: 'online' });
    await waitFor('the trackers, events and updates', () =>
      ['Anna phone', 'Shelly Plus 1PM Light button', 'bulb', 'Router firmware'].every((n) => home.hearth.bridge.registry.entities().some((e) => e.name === n)),
    );
  });
  after(() => home?.close());

  it('a tracker is home, not_home or the zone it names', async () => {
    await home.publish('presence/anna', 'home');
    await waitFor('home', () => value('Anna phone') === 'home');
    assert.match(await read('Anna phone'), /: home;/);
    await home.publish('presence/anna', 'not_home');
    await waitFor('away', () => value('Anna phone') === 'not_home');
    await home.publish('presence/anna', 'Work');
    await waitFor('a zone', () => value('Anna phone') === 'Work');
    assert.match(await read('Anna phone'), /: "Work";/);
    // Read-only: no actuator tool.
    assert.equal(
      home.hearth.tools.all().filter((t) => t.capability === 'actuator' && t.meta.entityIds.includes(home.entity('Anna phone').id) && !t.meta.group).length,
      0,
    );
  });

  it("an event is the last event type its template renders, with when; another input's events leave it alone", async () => {
    const shelly = 'shellyplus1pm-aabbccddeeff/events/rpc';
    await home.publish(shelly, JSON.stringify({ params: { events: [{ id: 0, event: 'single_push' }] } }));
    await waitFor('the push', () => value('Shelly Plus 1PM Light button') === 'single_push');
    assert.match(await read('Shelly Plus 1PM Light button'), /last event single_push; updated/);
    // Input 1's event: the template renders nothing, the last event stays.
    await home.publish(shelly, JSON.stringify({ params: { events: [{ id: 1, event: 'long_push' }] } }));
    await home.publish(shelly, JSON.stringify({ params: { events: [{ id: 0, event: 'double_push' }] } }));
    await waitFor('the double push', () => value('Shelly Plus 1PM Light button') === 'double_push');
  });

  it('an event type the device did not declare is refused (logged), not shown', async () => {
    const shelly = 'shellyplus1pm-aabbccddeeff/events/rpc';
    await home.publish(shelly, JSON.stringify({ params: { events: [{ id: 0, event: 'unlock_the_door' }] } }));
    await waitFor('the refusal logged', () => home.logs.lines.some((l) => /is not one of its event types/.test(JSON.stringify(l))));
    assert.equal(value('Shelly Plus 1PM Light button'), 'double_push');
  });

  it("Zigbee2MQTT's update: installed and latest version from its template; install goes to the bridge, so it is only read", async () => {
    await home.publish(
      'zigbee2mqtt/bulb',
      JSON.stringify({ state: 'ON', update: { state: 'available', installed_version: 16777287, latest_version: 16777303 } }),
    );
    await waitFor('the versions', () => value('bulb') === 16777287);
    // Its discovery says entity_category config: agents are not shown it until a person exposes it.
    assert.equal(home.entity('bulb').exposed, false);
    assert.doesNotMatch(await read('bulb'), /installed version/);
    home.hearth.home.exposeEntity(home.entity('bulb').id, true);
    const text = await read('bulb');
    assert.match(text, /installed version 16777287, latest version 16777303/);
    assert.equal(home.entity('bulb').commandTopic, undefined);
    assert.equal(
      home.hearth.tools.all().filter((t) => t.capability === 'actuator' && t.meta.entityIds.includes(home.entity('bulb').id) && !t.meta.group).length,
      0,
    );
  });

  it('installing is confirmed when the device says it is installing; the audit row is an install', async () => {
    await home.publish('router/fw/state', JSON.stringify({ installed_version: '1.0', latest_version: '1.1' }));
    // A version is kept as written ("1.0", not 1).
    await waitFor('the router versions', () => value('Router firmware') === '1.0');
    home.clear();
    const result = await home.call('Router firmware', { action: 'install' });
    assert.match(result.text!, /^confirmed: .*installing true/);
    assert.deepEqual(home.received, [{ topic: 'router/fw/install', payload: 'install' }]);
    assert.equal(home.hearth.audit.tail(1)[0]!.action, 'install');
  });
});
