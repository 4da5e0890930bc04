// Talking to Hearth's HTTP API from a test: one JSON request, and server-sent events read as they come.
import assert from 'node:assert/strict';

export interface RequestOptions {
  method?: string;
  /** A bearer token; none when null or left out. */
  token?: string | null;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is (with the JSON content type unless `headers` say another). */
  raw?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
  /** Throw when a non-empty answer is not JSON (instead of `json: undefined`). */
  strictJson?: boolean;
}

export interface Reply {
  status: number;
  /** The answer parsed as JSON; undefined when empty (or, unless strictJson, not JSON). */
  json: any;
  text: string;
  headers: Headers;
}

export async function request(url: string, options: RequestOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(url, { method: options.method ?? 'GET', headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? 15_000) });
  const text = await res.text();
  let json: any;
  if (options.strictJson) json = text ? JSON.parse(text) : undefined;
  else {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.status, json, text, headers: res.headers };
}

export interface SseEvent {
  event: string;
  data: any;
}

/** One block of an event stream as an event; undefined for a block with no data (a comment, a keep-alive). */
function parseBlock(block: string): SseEvent | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  return data.length ? { event, data: JSON.parse(data.join('\n')) } : undefined;
}

/** Server-sent events from a fetch response, every one kept in `events` as it arrives, until the stream ends. */
export function collectEvents(res: Response): { events: SseEvent[]; done: Promise<void>; cancel(): Promise<void> } {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = '';
  const done = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const ev = parseBlock(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (ev) events.push(ev);
      }
    }
  })();
  return { events, done, cancel: () => reader.cancel().catch(() => undefined) };
}

/** Server-sent events from a fetch response read one at a time, with a deadline per read. */
export function sseReader(res: Response) {
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const seen: SseEvent[] = [];
  const late = (timeoutMs: number) => new Error(`no event within ${timeoutMs} ms; seen: ${seen.map((e) => e.event).join(', ')}`);
  return {
    /** Every event read so far. */
    seen,
    /** The next event, or null at the end of the stream. */
    async next(timeoutMs = 5000): Promise<SseEvent | null> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const ev = parseBlock(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (ev) {
            seen.push(ev);
            return ev;
          }
          continue;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw late(timeoutMs);
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([reader.read(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(late(timeoutMs)), left)))]).finally(
          () => clearTimeout(timer),
        );
        if (chunk.done) return null;
        buffer += decoder.decode(chunk.value, { stream: true });
      }
    },
    /** Events until one named `name` (included). */
    async until(name: string, timeoutMs = 5000): Promise<SseEvent> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const ev = await this.next(Math.max(1, deadline - Date.now()));
        if (!ev) throw new Error(`stream ended before ${name}; seen: ${seen.map((e) => e.event).join(', ')}`);
        if (ev.event === name) return ev;
      }
    },
    /** Every event to the end of the stream. */
    async rest(timeoutMs = 10_000): Promise<SseEvent[]> {
      const deadline = Date.now() + timeoutMs;
      const out: SseEvent[] = [];
      for (;;) {
        const ev = await this.next(Math.max(1, deadline - Date.now()));
        if (!ev) return out;
        out.push(ev);
      }
    },
    cancel: () => reader.cancel().catch(() => undefined),
  };
}
