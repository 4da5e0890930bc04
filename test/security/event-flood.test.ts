// An event entity (#31) records every occurrence in history, where other kinds record only changes. A device
// that floods events (thousands of "press" a second) must not fill the history budget, which would push out every
// other entity's history, nor keep the bridge from the rest: its events are recorded at a bounded rate (the excess
// said once in the log), and a sensor's reading and a call made meanwhile are served. Real broker (aedes), real
// SQLite file, Home Assistant discovery.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EVENT_BURST, EVENT_RATE, HistoryRecorder } from '../../src/history/recorder.js';
import { type DiscoveredHome, openDiscoveredHome } from '../helpers/discovered-home.js';
import { OWNER } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const FLOOD = 3000;

describe('security: a flood of events is bounded and does not starve the rest', () => {
  let home: DiscoveredHome;
  // The daemon's recorder, on the home's own history store and state cache.
  let recorder: HistoryRecorder;
  const history = logSink('debug');

  before(async () => {
    home = await openDiscoveredHome({ listen: [] });
    recorder = new HistoryRecorder(home.hearth.history, home.hearth.bridge.cache, history.log.child({ part: 'history' }));
    await home.publish('homeassistant/event/bell/config', { name: 'Bell', unique_id: 'bell', state_topic: 'flood/bell', event_types: ['press', 'release'] });
    await home.publish('homeassistant/sensor/temp/config', {
      name: 'Porch temperature',
      unique_id: 'porch_temp',
      state_topic: 'flood/temp',
      unit_of_measurement: '°C',
    });
    await waitFor('both entities', () => ['Bell', 'Porch temperature'].every((n) => home.hearth.bridge.registry.entities().some((e) => e.name === n)));
  });
  after(async () => {
    recorder?.close();
    await home?.close();
  });

  it(`${FLOOD} events: at most a burst and a rate of them recorded, the sensor and a read served meanwhile`, async () => {
    const bell = home.entity('Bell');
    const temp = home.entity('Porch temperature');
    const started = Date.now();
    const sends: Array<Promise<unknown>> = [];
    for (let i = 0; i < FLOOD; i++) {
      sends.push(home.device.publishAsync('flood/bell', JSON.stringify({ event_type: 'press' })));
      if (i === FLOOD / 2) sends.push(home.device.publishAsync('flood/temp', '21.5'));
    }
    await Promise.all(sends);
    // The last one, on the same topic after the rest: once it is in the cache, every message before it was handled.
    await home.device.publishAsync('flood/bell', JSON.stringify({ event_type: 'release' }));
    await waitFor('the sensor reading', () => home.hearth.bridge.cache.get(temp.id)?.value === 21.5);
    const read = await home.hearth.tools.call('get_state', { entity: temp.id }, OWNER);
    assert.match(read.text!, /21\.5/);
    await waitFor('the last event', () => home.hearth.bridge.cache.get(bell.id)?.value === 'release');
    const elapsedS = (Date.now() - started) / 1000;
    recorder.flush();
    const rows = home.hearth.history.latest(bell.id, started - 1000, Date.now() + 1000, FLOOD + 10).length;
    const allowed = EVENT_BURST + Math.ceil(elapsedS * EVENT_RATE) + 1;
    assert.ok(rows >= 1 && rows <= allowed, `${rows} event rows recorded in ${elapsedS.toFixed(1)} s (at most ${allowed})`);
    assert.equal(home.hearth.history.latest(temp.id, started - 1000, Date.now() + 1000, 10).length, 1);
    const said = history.lines.filter((l) => l.entity === bell.id && /faster than/.test(l.msg));
    assert.equal(said.length, 1, 'the excess is said once');
  });
});
