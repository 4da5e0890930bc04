// An error in a log line is the Error itself, through pino's serializer: a person
// reading the log gets its type, message and stack, not only a message string.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { MqttConnection } from '../../src/mqtt/connection.js';
import { freePort } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

let conn: MqttConnection | undefined;
after(async () => {
  await conn?.close();
});

it('a failing MQTT connection logs `err` with its type, message and stack', async () => {
  // Nothing listens on this port: the connection is refused.
  const url = `mqtt://127.0.0.1:${await freePort()}`;
  const sink = logSink('debug');
  conn = new MqttConnection({ url, clientId: `hearth-err-${process.pid}`, reconnectMinMs: 100, reconnectMaxMs: 400 }, sink.log);
  const line = await waitFor('an MQTT error line', () => sink.find(/^MQTT error$/)[0], 15_000);
  const err = line.err as { type?: unknown; message?: unknown; stack?: unknown; code?: unknown };
  assert.equal(typeof err, 'object', `err is ${JSON.stringify(line.err)}`);
  assert.equal(err.type, 'Error');
  assert.match(String(err.message), /ECONNREFUSED/);
  assert.match(String(err.stack), /^Error: .*ECONNREFUSED[\s\S]*\n +at /);
  assert.equal(err.code, 'ECONNREFUSED');
  assert.equal(line.url, url);
});
