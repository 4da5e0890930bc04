// Sirens (#31): Zigbee2MQTT's own Home Assistant siren config (its multi-part command template with tone,
// volume_level and duration), Zigbee2MQTT's `warning` expose for a real siren definition, and a JSON siren
// with a state; on a real broker. The built-in rules (migrations/pending/0015) make sounding or silencing
// one as strict as unlocking: checked on a real SQLite file.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'ha-discovery', 'z2m-siren-1.json');

describe('siren kind', () => {
  let home: DiscoveredHome;

  before(async () => {
    home = await openDiscoveredHome({
      listen: ['zigbee2mqtt/+/set', 'json-siren/set'],
      respond: (topic, payload) => {
        if (topic !== 'json-siren/set') return undefined;
        const body = JSON.parse(payload) as Record<string, unknown>;
        return [['json-siren/state', JSON.stringify({ state: body.state, tone: body.tone ?? 'bell', volume_level: body.volume_level ?? 0.5 })]];
      },
      // The Zigbee2MQTT bridge itself stays out: this case is its HA discovery output, as HA reads it.
      flags: { 'discovery.zigbee2mqtt.enabled': false },
    });
    // The built-in rules ask a person before a siren acts, even for owners (migration 0015); an allow above
    // priority 100 lets the test's owner act without one, as `hearth policy allow --priority 101` would.
    home.hearth.policy.add({ subject: 'role:owner', targetType: 'kind', target: 'siren', action: '*', effect: 'allow', priority: 101, note: 'test' });
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as { topic: string; payload: string };
    await home.publish('zigbee2mqtt/bridge/state', { state: 'online' });
    await home.publish(fixture.topic, fixture.payload);
    await home.publish('homeassistant/siren/porch/config', {
      name: 'Porch siren',
      unique_id: 'porch_siren',
      command_topic: 'json-siren/set',
      state_topic: 'json-siren/state',
      available_tones: ['bell', 'alarm'],
      support_volume_set: true,
      support_duration: false,
    });
    await home.publish('json-siren/state', JSON.stringify({ state: 'OFF' }));
    await waitFor('the sirens', () => ['siren', 'Porch siren'].every((n) => home.hearth.bridge.registry.entities().some((e) => e.name === n)));
  });
  after(() => home?.close());

  it("Zigbee2MQTT's siren config: its template gets tone, volume_level and duration; off uses the off template", async () => {
    const siren = home.entity('siren');
    assert.equal(siren.kind, 'siren');
    assert.deepEqual(siren.options.tone, ['emergency']);
    assert.deepEqual(Object.keys(siren.ranges).sort(), ['duration', 'volume_level']);
    home.clear();
    // Optimistic in HA (no state topic): sent, and said to be unconfirmable.
    const on = await home.call('siren', { action: 'turn_on', tone: 'emergency', volume: 0.6, duration: 5 });
    assert.match(on.text!, /^sent: turn on to .*reports no state/);
    await home.call('siren', { action: 'turn_off' });
    await waitFor('both commands', () => home.received.length >= 2);
    assert.deepEqual(
      home.received.map((m) => JSON.parse(m.payload)),
      [{ warning: { mode: 'emergency', level: 'high', duration: 5 } }, { warning: { mode: 'stop' } }],
    );
    assert.equal(home.hearth.audit.tail(2)[0]!.outcome, 'unconfirmed');
  });

  it('without a command template: JSON {"state", "tone", "volume_level"}, confirmed by the reported state', async () => {
    home.clear();
    const on = await home.call('Porch siren', { action: 'turn_on', tone: 'alarm', volume: 0.8 });
    assert.match(on.text!, /^confirmed: .*on, tone "?alarm"?, volume level 0.8/);
    assert.deepEqual(JSON.parse(home.received[0]!.payload), { state: 'ON', tone: 'alarm', volume_level: 0.8 });
    assert.match((await home.call('Porch siren', { action: 'turn_off' })).text!, /^confirmed: .*off/);
  });

  it('bad input is refused before anything is sent: unknown tone, volume out of range, a duration it does not take', async () => {
    home.clear();
    const tone = await home.call('Porch siren', { action: 'turn_on', tone: 'klaxon' });
    assert.equal(tone.isError, true);
    assert.match(tone.text!, /bell.*alarm/);
    const loud = await home.call('Porch siren', { action: 'turn_on', volume: 3 });
    assert.equal(loud.isError, true);
    const long = await home.call('Porch siren', { action: 'turn_on', duration: 10 });
    assert.equal(long.isError, true);
    assert.deepEqual(home.received, []);
  });

  it("Zigbee2MQTT's warning expose (a real siren definition) becomes a siren sending the warning composite", async () => {
    const entry = await z2mEntry('HS2WD-E', '0x0017880104e45549', 'Hall siren');
    const { convertDevice } = await import('../../src/devices/discovery/zigbee2mqtt/device.js');
    const device = convertDevice(entry, { prefix: 'zigbee2mqtt', deviceAvailability: true }).device!;
    const siren = device.entities.find((e) => e.kind === 'siren')!;
    assert.ok(siren, `a siren among ${device.entities.map((e) => e.kind).join(', ')}`);
    assert.equal(siren.commandTopic, 'zigbee2mqtt/Hall siren/set');
    // Its modes are the tones (stop is off); it has no level, so no volume; duration in seconds.
    assert.deepEqual(siren.options.tone, ['emergency']);
    assert.deepEqual(Object.keys(siren.ranges), ['duration']);
    const { encodeCommand } = await import('../../src/devices/commands.js');
    assert.deepEqual(JSON.parse(encodeCommand(siren, { action: 'turn_on', duration: 30 })[0]!.payload), {
      warning: { mode: 'emergency', duration: 30 },
    });
    assert.deepEqual(JSON.parse(encodeCommand(siren, { action: 'turn_off' })[0]!.payload), { warning: { mode: 'stop' } });
  });
});

describe('siren and update built-in rules (migration 0015)', () => {
  it('sounding or silencing a siren, and installing firmware, need a person even for an owner; reading does not', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-rules-'));
    try {
      const db = openDatabase(join(dir, 'h.db'));
      const policy = new SqlitePolicy(db);
      policy.add({ subject: 'role:owner', targetType: 'any', action: 'actuate', effect: 'allow', priority: 10 });
      const ask = (kind: string, action: string) =>
        policy.decide({
          principal: { id: 'chat:olivia', roles: ['owner'] },
          tool: 't',
          capability: action === 'read' ? 'read' : 'actuator',
          action,
          entityId: `x.${kind}`,
          kind,
          args: {},
        }).effect;
      assert.equal(ask('siren', 'turn_on'), 'confirm');
      assert.equal(ask('siren', 'turn_off'), 'confirm');
      assert.equal(ask('siren', 'read'), 'allow');
      assert.equal(ask('update', 'install'), 'confirm');
      assert.equal(ask('update', 'read'), 'allow');
      assert.equal(ask('vacuum', 'start'), 'allow');
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
