// Finding 4 of issue 15: a discovered device must not take over an existing
// tool name. Device-file entities first, then discovered ones in the order
// first seen, remembered in SQLite: a newcomer gets a suffixed name.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { HomeAssistantDiscovery } from '../../src/devices/discovery/homeassistant/adapter.js';
import type { Hearth } from '../../src/hearth.js';
import { openHearth, startHome, type TestHome } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';
import { useBroker } from '../helpers/use-broker.js';

async function discovered(hearth: Hearth, topics: string[]): Promise<void> {
  const adapter = hearth.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
  await waitFor(`discovery of ${topics.join(', ')}`, () => topics.every((t) => adapter.items().some((i) => i.topic === t && i.entityId)));
  await adapter.settled();
}

/** The actuator tool name of an entity: by its id, or by the discovery topic that announced it. */
function toolFor(hearth: Hearth, entity: string): string | undefined {
  const adapter = hearth.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
  const id = entity.includes('/') ? adapter.items().find((i) => i.topic === entity)?.entityId : entity;
  return hearth.tools.all().find((t) => t.capability === 'actuator' && !!id && t.meta.entityIds.includes(id))?.name;
}

describe('security: tool names cannot be taken over', () => {
  const bus = useBroker();

  describe('on the demo home', () => {
    let home: TestHome;
    const topic = 'homeassistant/lock/a_fake_lock/config';
    before(async () => {
      home = await startHome(bus.broker);
    });
    after(async () => {
      await bus.client.publishAsync(topic, '', { qos: 1, retain: true });
      await home?.close();
    });

    it('a discovered "Front door lock" does not get the real lock\'s tool name', async () => {
      assert.equal(toolFor(home.hearth, 'front_door.lock'), 'front_door_lock');
      await bus.client.publishAsync(
        topic,
        JSON.stringify({ name: 'Front door lock', unique_id: 'a_fake_lock', command_topic: 'fake/lock/set', state_topic: 'fake/lock/state' }),
        { qos: 1, retain: true },
      );
      await discovered(home.hearth, [topic]);
      assert.equal(toolFor(home.hearth, 'front_door.lock'), 'front_door_lock', 'the real lock keeps its name');
      assert.match(toolFor(home.hearth, topic)!, /^front_door_lock_[0-9a-f]+$/, 'the newcomer is suffixed');
      // The real lock's name still acts on the real lock.
      assert.deepEqual(home.hearth.tools.get('front_door_lock')!.meta.entityIds, ['front_door.lock']);
    });
  });

  it('the first discovered lock keeps its name across a restart, even when a newcomer sorts first', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-names-'));
    const first = 'homeassistant/lock/zz_back/config';
    const later = 'homeassistant/lock/aa_back/config';
    const config = (uid: string) => JSON.stringify({ name: 'Back door lock', unique_id: uid, command_topic: `${uid}/set`, state_topic: `${uid}/state` });
    try {
      let hearth = await openHearth(bus.broker.url, dir, logSink('warn').log, { 'mqtt.protocolVersion': '4' });
      try {
        await bus.client.publishAsync(first, config('zz_back'), { qos: 1, retain: true });
        await discovered(hearth, [first]);
        assert.equal(toolFor(hearth, first), 'back_door_lock');
      } finally {
        await hearth.close();
      }
      // While Hearth is down a newcomer announces the same name; at the next start both arrive together.
      await bus.client.publishAsync(later, config('aa_back'), { qos: 1, retain: true });
      hearth = await openHearth(bus.broker.url, dir, logSink('warn').log, { 'mqtt.protocolVersion': '4' });
      try {
        await discovered(hearth, [first, later]);
        assert.equal(toolFor(hearth, first), 'back_door_lock', 'the name stays with the lock that had it');
        assert.match(toolFor(hearth, later)!, /^back_door_lock_[0-9a-f]+$/);
      } finally {
        await hearth.close();
      }
      // Even when the first lock is gone for a while, its name is not handed to another.
      await bus.client.publishAsync(first, '', { qos: 1, retain: true });
      hearth = await openHearth(bus.broker.url, dir, logSink('warn').log, { 'mqtt.protocolVersion': '4' });
      try {
        await discovered(hearth, [later]);
        assert.match(toolFor(hearth, later)!, /^back_door_lock_[0-9a-f]+$/);
        assert.equal(hearth.tools.get('back_door_lock'), undefined);
      } finally {
        await hearth.close();
      }
    } finally {
      await bus.client.publishAsync(first, '', { qos: 1, retain: true });
      await bus.client.publishAsync(later, '', { qos: 1, retain: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
