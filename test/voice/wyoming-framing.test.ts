// Wyoming framing: events in and out, split anywhere, and every bad frame a
// FrameError naming what was wrong (the server closes that connection).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeEvent, FrameError, FrameReader } from '../../src/wyoming/framing.js';

const limits = { maxHeaderBytes: 256, maxDataBytes: 1024, maxPayloadBytes: 2048 };

describe('Wyoming framing', () => {
  it('reads what it writes, byte by byte: header, data merged over the header data, payload', () => {
    const wire = Buffer.concat([
      encodeEvent({ type: 'transcript', data: { text: 'turn on the lamp', context: { conversation_id: 'c1' } } }),
      encodeEvent({ type: 'audio-chunk', data: { rate: 16000, width: 2, channels: 1 }, payload: Buffer.from([1, 2, 3, 4]) }),
      Buffer.from('{"type":"describe"}\n'),
      // Inline header data, with data bytes on top of it.
      Buffer.from('{"type":"x","data":{"a":1,"b":1},"data_length":7}\n{"b":2}'),
    ]);
    const reader = new FrameReader(limits);
    const events = [];
    for (const byte of wire) events.push(...reader.push(Buffer.from([byte])));
    assert.deepEqual(
      events.map((e) => e.type),
      ['transcript', 'audio-chunk', 'describe', 'x'],
    );
    assert.deepEqual(events[0].data, { text: 'turn on the lamp', context: { conversation_id: 'c1' } });
    assert.deepEqual([...events[1].payload!], [1, 2, 3, 4]);
    assert.deepEqual(events[2].data, {});
    assert.deepEqual(events[3].data, { a: 1, b: 2 });
    const header = JSON.parse(
      encodeEvent({ type: 'handled', data: { text: 'ok' } })
        .toString('utf8')
        .split('\n')[0],
    );
    assert.equal(header.type, 'handled');
    assert.equal(typeof header.version, 'string');
    assert.equal(header.data_length, Buffer.byteLength('{"text":"ok"}'));
  });

  const bad: Array<[string, string | Buffer, RegExp]> = [
    ['a header line over the cap with no newline', 'x'.repeat(300), /header line longer than 256 bytes/],
    ['a header line over the cap', `{"type":"${'y'.repeat(300)}"}\n`, /header line of \d+ bytes is over the limit/],
    ['a header that is not JSON', '{"type": describe}\n', /header line is not JSON/],
    ['a header that is not an object', '["describe"]\n', /must be a JSON object/],
    ['a header without a type', '{"data":{}}\n', /no event type/],
    ['data_length over the cap', '{"type":"transcript","data_length":5000}\n', /data_length 5000 is over the limit of 1024/],
    ['payload_length over the cap', '{"type":"audio-chunk","payload_length":999999}\n', /payload_length 999999 is over the limit of 2048/],
    ['a negative length', '{"type":"x","data_length":-1}\n', /data_length must be a whole number/],
    ['data that is not JSON', '{"type":"transcript","data_length":5}\nhello', /data of a transcript event is not JSON/],
    ['header data that is not an object', '{"type":"x","data":"text"}\n', /"data" must be a JSON object/],
  ];
  for (const [what, bytes, message] of bad) {
    it(`refuses ${what}`, () => {
      const reader = new FrameReader(limits);
      assert.throws(
        () => reader.push(Buffer.from(bytes)),
        (err: unknown) => err instanceof FrameError && message.test(err.message),
      );
      // Spent: nothing more is read from that stream.
      assert.throws(() => reader.push(Buffer.from('{"type":"describe"}\n')), FrameError);
    });
  }
});
