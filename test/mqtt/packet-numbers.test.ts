// The bridge's MQTT client does not keep mqtt-packet's 65,536-Buffer number cache (6 MiB): packets
// are still written byte for byte the same.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import '../../src/mqtt/connection.js';
import { dropPacketNumberCache } from '../../src/mqtt/packet-numbers.js';

const fromMqtt = createRequire(createRequire(import.meta.url).resolve('mqtt'));
const packet = fromMqtt('mqtt-packet') as {
  writeToStream: ((p: object, s: NodeJS.WritableStream) => boolean) & { cacheNumbers: boolean };
  generate: (p: object) => Buffer;
};
const numbers = fromMqtt('mqtt-packet/numbers.js') as { cache: Record<number, Buffer> };

describe('mqtt-packet number cache', () => {
  it('is off once the connection module is loaded, and stays empty while packets are written', async () => {
    assert.equal(dropPacketNumberCache(), true);
    assert.equal(packet.writeToStream.cacheNumbers, false);
    const publish = { cmd: 'publish', topic: 'home/lamp/set', payload: Buffer.from('ON'), qos: 1, messageId: 4242, retain: false, dup: false };
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    packet.writeToStream(publish, out);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(Buffer.concat(chunks), packet.generate(publish), 'the same bytes as the one-shot encoder');
    assert.equal(Object.keys(numbers.cache).length, 0, 'no cache was filled');
  });
});
