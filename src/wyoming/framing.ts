// Wyoming framing, written from the protocol's public description (the
// rhasspy/wyoming README): an event is one JSON header line
//   {"type": "...", "data": {...}?, "data_length": n?, "payload_length": m?, "version": "..."?}\n
// then `data_length` bytes of UTF-8 JSON (an object merged on top of the
// header's `data`), then `payload_length` bytes of payload (audio, anything).
// Everything a peer sends is bounded here: the header line, the data and the
// payload have caps, and a frame that breaks them, or is not JSON, is a
// FrameError (the server closes that connection; the process goes on).
import { jsonDepth, MAX_BODY_DEPTH } from '../util/bounded-json.js';

/** The protocol version written in headers. */
export const WYOMING_VERSION = '1.5.3';

export interface WyomingEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
}

export interface FrameLimits {
  /** Longest header line, newline excluded. */
  maxHeaderBytes: number;
  maxDataBytes: number;
  maxPayloadBytes: number;
}

export const DEFAULT_FRAME_LIMITS: FrameLimits = {
  maxHeaderBytes: 64 * 1024,
  maxDataBytes: 1024 * 1024,
  // Audio chunks are a few KiB; Hearth reads no payload, so a big one is only memory spent.
  maxPayloadBytes: 1024 * 1024,
};

export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FrameError';
  }
}

/** One event on the wire. */
export function encodeEvent(event: { type: string; data?: Record<string, unknown>; payload?: Buffer }): Buffer {
  const header: Record<string, unknown> = { type: event.type, version: WYOMING_VERSION };
  const data = event.data && Object.keys(event.data).length ? Buffer.from(JSON.stringify(event.data), 'utf8') : undefined;
  if (data) header.data_length = data.length;
  if (event.payload?.length) header.payload_length = event.payload.length;
  // JSON.stringify never writes a raw newline, so the header stays one line.
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'), ...(data ? [data] : []), ...(event.payload?.length ? [event.payload] : [])]);
}

function length(header: Record<string, unknown>, field: string, max: number): number {
  const v = header[field];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new FrameError(`${field} must be a whole number of bytes, got ${JSON.stringify(v)}`);
  if (v > max) throw new FrameError(`${field} ${v} is over the limit of ${max} bytes`);
  return v;
}

function jsonObject(text: string, what: string): Record<string, unknown> {
  if (jsonDepth(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) throw new FrameError(`${what} nests deeper than ${MAX_BODY_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FrameError(`${what} is not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new FrameError(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * Turns a byte stream into events. push() returns the events completed by a
 * chunk; it throws FrameError on a bad frame, after which the reader is spent.
 */
export class FrameReader {
  private buffer: Buffer = Buffer.alloc(0);
  private pending?: { type: string; data: Record<string, unknown>; dataLength: number; payloadLength: number };
  private failed = false;

  constructor(private readonly limits: FrameLimits = DEFAULT_FRAME_LIMITS) {}

  push(chunk: Buffer): WyomingEvent[] {
    if (this.failed) throw new FrameError('the stream already had a bad frame');
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const out: WyomingEvent[] = [];
    try {
      for (;;) {
        if (!this.pending) {
          const nl = this.buffer.indexOf(0x0a);
          if (nl < 0) {
            if (this.buffer.length > this.limits.maxHeaderBytes)
              throw new FrameError(`header line longer than ${this.limits.maxHeaderBytes} bytes without a newline`);
            return out;
          }
          if (nl > this.limits.maxHeaderBytes) throw new FrameError(`header line of ${nl} bytes is over the limit of ${this.limits.maxHeaderBytes}`);
          const line = this.buffer.subarray(0, nl).toString('utf8').trim();
          this.buffer = this.buffer.subarray(nl + 1);
          if (line === '') continue;
          const header = jsonObject(line, 'the header line');
          if (typeof header.type !== 'string' || header.type === '' || header.type.length > 100)
            throw new FrameError('the header has no event type (a non-empty "type" string)');
          const inline = header.data;
          if (inline !== undefined && inline !== null && (typeof inline !== 'object' || Array.isArray(inline)))
            throw new FrameError('the header\'s "data" must be a JSON object');
          this.pending = {
            type: header.type,
            data: { ...((inline as Record<string, unknown> | undefined) ?? {}) },
            dataLength: length(header, 'data_length', this.limits.maxDataBytes),
            payloadLength: length(header, 'payload_length', this.limits.maxPayloadBytes),
          };
        }
        const p = this.pending;
        if (this.buffer.length < p.dataLength + p.payloadLength) return out;
        if (p.dataLength) Object.assign(p.data, jsonObject(this.buffer.subarray(0, p.dataLength).toString('utf8'), `the data of a ${p.type} event`));
        const payload = p.payloadLength ? Buffer.from(this.buffer.subarray(p.dataLength, p.dataLength + p.payloadLength)) : undefined;
        this.buffer = this.buffer.subarray(p.dataLength + p.payloadLength);
        this.pending = undefined;
        out.push({ type: p.type, data: p.data, ...(payload ? { payload } : {}) });
      }
    } catch (err) {
      this.failed = true;
      this.buffer = Buffer.alloc(0);
      throw err;
    }
  }
}
