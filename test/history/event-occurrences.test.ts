// An event entity's history is every occurrence (#31): the doorbell pressed twice is two rows, where
// a lamp reported "on" twice is one change. Real SQLite file, the recorder fed as the state cache does.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import type { Entity } from '../../src/devices/model.js';
import type { EntityState } from '../../src/devices/state-cache.js';
import { HistoryRecorder } from '../../src/history/recorder.js';
import { HistoryStore } from '../../src/history/store.js';
import { logSink } from '../helpers/log-sink.js';

const entity = (id: string, kind: Entity['kind']): Entity =>
  ({
    id,
    key: 'x',
    kind,
    name: id,
    aliases: [],
    deviceId: id.split('.')[0],
    attributes: {},
    commandFormat: 'plain',
    commandTopics: {},
    payloads: {},
    states: {},
    ranges: {},
    options: {},
  }) as Entity;

describe('history of events', () => {
  it('records each event, even of the same type; a state that did not change is recorded once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-events-'));
    const db = openDatabase(join(dir, 'h.db'));
    try {
      const store = new HistoryStore(db);
      const cache = new EventEmitter();
      const recorder = new HistoryRecorder(store, cache as never, logSink('warn').log, { flushMs: 60_000 });
      const bell = entity('doorbell.button', 'event');
      const lamp = entity('lamp.lamp', 'switch');
      let t = Date.now() - 10_000;
      for (const [e, value] of [
        [bell, 'press'],
        [bell, 'press'],
        [lamp, 'on'],
        [lamp, 'on'],
      ] as const) {
        const state: EntityState = { entityId: e.id, value, attributes: {}, available: true, updatedAt: (t += 1000) } as EntityState;
        cache.emit('change', state, e);
      }
      recorder.flush();
      const since = Date.now() - 60_000;
      assert.equal(store.latest('doorbell.button', since, Date.now(), 10).length, 2);
      assert.equal(store.latest('lamp.lamp', since, Date.now(), 10).length, 1);
      recorder.close();
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
