// Issue 27: 10,000 discovery configs from one device kept the daemon at 100% CPU for over five minutes, with
// work growing faster than the number of configs, and the 8,222 names it invented were remembered for ever.
// Now one device keeps at most discovery.maxEntitiesPerDevice entities and announces at most
// discovery.announcementsPerSecond (refusals logged once per device, not per message), the source at most
// discovery.maxEntities, calls are served during the flood, and remembered names expire and are bounded.
// A real broker (aedes), the demo home, a real SQLite file. No timing is measured.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import type { HomeAssistantDiscovery } from '../../src/devices/discovery/homeassistant/adapter.js';
import { SqliteEntityNames } from '../../src/devices/entity-names.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

const FLOOD = 2000;

describe('security: one device cannot flood discovery', () => {
  const home = useHome();

  it(`${FLOOD} configs from one device: at most 256 entities kept, one log line per bound, and a call during the flood is answered`, async () => {
    const adapter = home.hearth.bridge.adapters.find((a) => a.name === 'homeassistant') as HomeAssistantDiscovery;
    let processed = 0;
    adapter.on('processed', (e) => e.topic.startsWith('homeassistant/sensor/flood/') && processed++);
    const sending = (async () => {
      for (let i = 0; i < FLOOD; i++) {
        const config = {
          name: `Flood ${i}`,
          unique_id: `flood_${i}`,
          state_topic: `flood/s${i}`,
          device: { identifiers: ['flood_device'], name: 'Flood' },
        };
        home.device.publish(`homeassistant/sensor/flood/s${i}/config`, JSON.stringify(config), { qos: 0 });
      }
      await home.device.publishAsync('flood/done', '1', { qos: 1 });
    })();
    // A call made while the configs pour in is served (it waits on nothing the flood holds).
    const r = await home.hearth.tools.call('kitchen_light', { action: 'turn_on' }, OWNER);
    assert.match(r.text ?? '', /^confirmed/, JSON.stringify(r));
    await sending;
    await waitFor('every config handled', () => processed >= FLOOD, 60_000);
    await adapter.settled();

    const kept = home.hearth.bridge.registry.entities().filter((e) => e.id.startsWith('flood'));
    assert.ok(kept.length > 0 && kept.length <= 256, `kept ${kept.length}`);
    const lines = home.logs.lines.filter((l) => /discovery config ignored/.test(l.msg) && l.device === 'flood');
    assert.ok(lines.length >= 1 && lines.length <= 2, `one line per bound, not per message: ${lines.length}`);
    assert.match(lines.map((l) => l.msg).join('\n'), /discovery\.(maxEntitiesPerDevice|announcementsPerSecond)/);
  });
});

describe('security: remembered entity names are bounded and expire', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-names-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('names unseen for rememberDays are forgotten; beyond rememberMax the longest unseen go; those seen stay', () => {
    const path = join(dir, 'hearth.db');
    const db = openDatabase(path);
    try {
      const names = new SqliteEntityNames(db);
      names.firstSeen(Array.from({ length: 300 }, (_, i) => `flood.e${i}`));
      names.firstSeen(['kitchen.light']);
      const old = new Date(Date.now() - 200 * 86_400_000).toISOString();
      const older = new Date(Date.now() - 300 * 86_400_000).toISOString();
      db.prepare("UPDATE entity_names SET last_seen = ? WHERE entity_id LIKE 'flood.%' AND cast(substr(entity_id, 8) AS INTEGER) < 100").run(older);
      db.prepare("UPDATE entity_names SET last_seen = ? WHERE entity_id LIKE 'flood.%' AND cast(substr(entity_id, 8) AS INTEGER) >= 100").run(old);
      const count = () => (db.prepare('SELECT count(*) AS n FROM entity_names').get() as { n: number }).n;
      assert.equal(count(), 301);
      // 250 days: the oldest hundred go.
      new SqliteEntityNames(db, undefined, { days: 250, max: 20_000 });
      assert.equal(count(), 201);
      // At most 150: the longest unseen go first; the entity seen today stays.
      new SqliteEntityNames(db, undefined, { days: 250, max: 150 });
      assert.equal(count(), 150);
      assert.ok(db.prepare("SELECT 1 FROM entity_names WHERE entity_id = 'kitchen.light'").get());
    } finally {
      db.close();
    }
  });
});
