// An incremental Server-Sent Events parser, tolerant of what OpenAI-compatible
// servers actually send:
//  - LF, CRLF or lone CR line endings, and a line ending split across reads;
//  - `:` comment / keepalive lines (ignored);
//  - `data:` with or without the space after the colon;
//  - events separated by a blank line (the spec) or, from sloppy servers, not
//    separated at all: a `data:` line that follows a complete JSON payload
//    starts a new event instead of being glued onto it;
//  - llama.cpp's non-standard `error: {...}` line, reported as an `error` event.
// Bytes in, whole events out; it never parses the JSON itself except to decide
// the missing-blank-line case above.

export interface SseEvent {
  /** The `event:` field, `message` when none was given; `error` for llama.cpp's `error:` lines. */
  event: string;
  /** The `data:` lines joined with `\n`. */
  data: string;
}

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private dataLines: string[] = [];
  private eventName = '';

  /** Feed bytes (or already-decoded text); returns the events completed by them. */
  push(chunk: Uint8Array | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    return this.drainLines(false);
  }

  /** The stream ended: flush a last line without a terminator and a pending event. */
  end(): SseEvent[] {
    this.buffer += this.decoder.decode();
    const out = this.drainLines(true);
    const last = this.dispatch();
    if (last) out.push(last);
    return out;
  }

  private drainLines(final: boolean): SseEvent[] {
    const out: SseEvent[] = [];
    let start = 0;
    for (;;) {
      let i = start;
      const len = this.buffer.length;
      while (i < len) {
        const c = this.buffer.charCodeAt(i);
        if (c === 10 || c === 13) break;
        i++;
      }
      if (i >= len) break; // no terminator yet
      // A CR at the very end may be the first half of a CRLF split across reads.
      if (this.buffer.charCodeAt(i) === 13 && i + 1 >= len && !final) break;
      const line = this.buffer.slice(start, i);
      start = this.buffer.charCodeAt(i) === 13 && this.buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
      this.line(line, out);
    }
    this.buffer = this.buffer.slice(start);
    if (final && this.buffer.length) {
      const rest = this.buffer;
      this.buffer = '';
      this.line(rest, out);
    }
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      const ev = this.dispatch();
      if (ev) out.push(ev);
      return;
    }
    if (line.charCodeAt(0) === 58 /* ':' */) return; // comment / keepalive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    switch (field) {
      case 'data':
        // No blank line between events: a new data line after a payload that
        // is already whole starts the next event.
        if (this.dataLines.length && isCompletePayload(this.dataLines.join('\n'))) {
          const ev = this.dispatch();
          if (ev) out.push(ev);
        }
        this.dataLines.push(value);
        break;
      case 'event':
        if (this.dataLines.length && isCompletePayload(this.dataLines.join('\n'))) {
          const ev = this.dispatch();
          if (ev) out.push(ev);
        }
        this.eventName = value;
        break;
      case 'error': {
        // llama.cpp: `error: {"code":500,"message":"...","type":"server_error"}`
        const pending = this.dispatch();
        if (pending) out.push(pending);
        out.push({ event: 'error', data: value });
        break;
      }
      default:
        // id, retry and unknown fields carry nothing we use.
        break;
    }
  }

  private dispatch(): SseEvent | undefined {
    const event = this.eventName || 'message';
    this.eventName = '';
    if (!this.dataLines.length) return undefined;
    const data = this.dataLines.join('\n');
    this.dataLines = [];
    return { event, data };
  }
}

function isCompletePayload(text: string): boolean {
  const t = text.trim();
  if (t === '[DONE]') return true;
  if (!t.startsWith('{') || !t.endsWith('}')) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}
