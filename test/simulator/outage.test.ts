// A broker outage writes one simulator line when the links are lost and one when they are back, with the
// number of retries between: not a line per device per retry.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

let broker: TestBroker | undefined;
let sim: Simulator | undefined;
after(async () => {
  await sim?.close();
  await broker?.stop();
});

test('an outage of the broker is two simulator log lines, the second with the retries between', async () => {
  broker = await startMosquitto();
  const { devices } = loadDeviceFiles([fileURLToPath(new URL('../../devices/demo', import.meta.url))]);
  const { log, lines } = logSink('debug');
  sim = await startSimulator({ url: `mqtt://127.0.0.1:${broker.port}`, devices, log });
  const simLines = () => lines.filter((l) => /^simulator: /.test(l.msg) || /mqtt error/.test(l.msg));

  // restart() takes the broker away and brings it back: every device's clients drop and retry meanwhile.
  await broker.restart();
  await waitFor('the back line', () => simLines().some((l) => /the broker is back/.test(l.msg)), 60_000);

  const seen = simLines();
  assert.equal(seen.length, 2, `one line lost, one back; got:\n${seen.map((l) => l.msg).join('\n')}`);
  assert.match(seen[0]!.msg, /lost the broker/);
  assert.match(seen[1]!.msg, /the broker is back/);
  assert.ok(Number(seen[1]!.retries) >= 1, `retries counted: ${seen[1]!.retries}`);
});
