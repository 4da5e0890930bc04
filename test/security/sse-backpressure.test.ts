// Issue 15, finding 8: the event stream has backpressure. A client that stops
// reading is dropped once its buffered bytes pass http.events.maxBufferedBytes
// (the server never holds more for it), a reading client is not; one token
// may hold at most http.events.maxStreamsPerToken streams (a 429 naming the
// cap); a revoked token's open stream closes, whichever connection revoked it.
// Real mosquitto, real SQLite, real HTTP server, a raw socket that never reads.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { TokenStore } from '../../src/auth/tokens.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/database.js';
import type { Hearth } from '../../src/hearth.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { McpHttpHandler } from '../../src/mcp/http.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const CAP = 256 * 1024;
const PER_TOKEN = 2;

const DEVICE = `devices:
  - id: ticker
    name: Ticker
    entities:
      text:
        kind: sensor
        name: Ticker text
        state_topic: test/ticker
`;

/** A fetch-based event reader that keeps reading and counts what it got. */
function reader(res: Response) {
  const r = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let ended = false;
  const done = (async () => {
    for (;;) {
      const chunk = await r.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) break;
      text += decoder.decode(chunk.value, { stream: true });
      // Keep only the tail: the test asks for the latest marker.
      if (text.length > 1_000_000) text = text.slice(-100_000);
    }
    ended = true;
  })();
  return {
    has: (marker: string) => text.includes(marker),
    get ended() {
      return ended;
    },
    done,
    cancel: () => r.cancel().catch(() => undefined),
  };
}

describe('security: event stream backpressure and caps', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let server: HttpServer;
  let mcp: McpHttpHandler;
  let publisher: MqttClient;
  let dir: string;
  let token: string;
  let otherToken: string;
  const logs = logSink('debug');

  const open = (secret: string) => fetch(`${server.url}/api/events`, { headers: { authorization: `Bearer ${secret}` } });

  before(async () => {
    broker = await startMosquitto();
    dir = mkdtempSync(join(tmpdir(), 'hearth-sse-'));
    mkdirSync(join(dir, 'devices'));
    writeFileSync(join(dir, 'devices', 'ticker.yaml'), DEVICE);
    hearth = await openHearth(broker.url, dir, logs.log, {
      'devices.paths': [join(dir, 'devices')],
      'http.events.maxBufferedBytes': String(CAP),
      'http.events.maxStreamsPerToken': String(PER_TOKEN),
    });
    mcp = new McpHttpHandler({ hearth, log: logs.log.child({ part: 'mcp' }) });
    server = await startHttpServer({
      hearth,
      host: '127.0.0.1',
      port: 0,
      log: logs.log.child({ part: 'http' }),
      mounts: [{ path: '/mcp', handle: (req, res, principal, t) => mcp.handle(req, res, principal, t), close: () => mcp.close() }],
    });
    token = hearth.tokens.create('wall-panel', 'http:panel').secret;
    otherToken = hearth.tokens.create('phone', 'http:phone').secret;
    publisher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  });
  after(async () => {
    await publisher?.endAsync(true).catch(() => undefined);
    await server?.close();
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('has sane defaults for the caps and refuses a bad setting, naming it', () => {
    const { config } = loadConfig({ cwd: dir, env: {}, flags: {} });
    assert.deepEqual(config.http.events, { maxBufferedBytes: 1024 * 1024, maxStreamsPerToken: 8 });
    for (const [field, value] of [
      ['http.events.maxBufferedBytes', '12'],
      ['http.events.maxStreamsPerToken', '0'],
      ['http.events.maxStreamsPerToken', 'many'],
    ]) {
      assert.throws(
        () => loadConfig({ cwd: dir, env: {}, flags: { [field]: value } }),
        (err: Error) => err instanceof ConfigError && err.field === field,
        `${field}=${value}`,
      );
    }
  });

  it('drops a client that stops reading once its buffer passes the cap, and keeps a reading one', async () => {
    const socket = net.connect(server.port, '127.0.0.1');
    socket.pause();
    let socketEnded = false;
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    const healthy = reader(await open(otherToken));
    await waitFor('two open event streams', () => server.eventStreams().open === 2);

    // ~8 KB per state event; publish in batches (half the cap) and let the reading client keep up.
    const filler = 'x'.repeat(8000);
    let n = 0;
    let maxBuffered = 0;
    for (let batch = 0; batch < 400 && server.eventStreams().dropped === 0; batch++) {
      for (let i = 0; i < 16; i++) await publisher.publishAsync('test/ticker', `${++n}:${filler}`);
      await waitFor(`the reading client got state ${n}`, () => healthy.has(`"value":"${n}:`), 20_000);
      maxBuffered = Math.max(maxBuffered, server.eventStreams().maxBuffered);
      assert.ok(maxBuffered <= CAP, `the server buffered ${maxBuffered} bytes for one stream (cap ${CAP})`);
    }
    assert.equal(server.eventStreams().dropped, 1, `the slow client was not dropped after ${n} state events`);
    assert.equal(server.eventStreams().open, 1);
    const line = logs.lines.find((l) => /event stream dropped/.test(String(l.msg)));
    assert.ok(line, 'the drop is logged');
    assert.equal(line.principal, 'http:panel');
    assert.equal(line.maxBufferedBytes, CAP);

    // The slow client, reading at last, finds its stream ended by the server.
    socket.on('end', () => (socketEnded = true));
    socket.on('close', () => (socketEnded = true));
    socket.resume();
    await waitFor('the slow client sees its stream end', () => socketEnded, 20_000);

    // The reading client is still served.
    await publisher.publishAsync('test/ticker', `${++n}:after`);
    await waitFor('the reading client still gets events', () => healthy.has(`"value":"${n}:after"`));
    assert.equal(healthy.ended, false);
    await healthy.cancel();
    socket.destroy();
  });

  it('caps open streams per token with a 429 that names the cap', async () => {
    const streams = [];
    for (let i = 0; i < PER_TOKEN; i++) {
      const res = await open(token);
      assert.equal(res.status, 200);
      streams.push(reader(res));
    }
    const refused = await open(token);
    assert.equal(refused.status, 429);
    const body = (await refused.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'too_many_streams');
    assert.match(body.error.message, new RegExp(`${PER_TOKEN} open event streams.*http\\.events\\.maxStreamsPerToken`));
    // Another token is not affected.
    const other = await open(otherToken);
    assert.equal(other.status, 200);
    const otherReader = reader(other);
    // Closing one frees its place.
    await streams[0].cancel();
    await waitFor('the closed stream is gone on the server', () => server.eventStreams().open === PER_TOKEN);
    const again = await open(token);
    assert.equal(again.status, 200);
    streams.push(reader(again));
    for (const s of [...streams.slice(1), otherReader]) await s.cancel();
    await waitFor('every stream closed', () => server.eventStreams().open === 0);
  });

  it("closes a revoked token's open stream, revoked here or from another connection", async () => {
    const here = hearth.tokens.create('revoked-here', 'http:temp').secret;
    const elsewhere = hearth.tokens.create('revoked-elsewhere', 'http:temp2').secret;
    const a = reader(await open(here));
    const b = reader(await open(elsewhere));
    const keep = reader(await open(otherToken));
    await waitFor('three streams open', () => server.eventStreams().open === 3);
    hearth.tokens.revoke('revoked-here');
    await waitFor('the stream of the token revoked in this process ends', () => a.ended);
    // Another process (the CLI) revokes through its own SQLite connection.
    const db = openDatabase(hearth.bridge.config.database.path);
    try {
      assert.equal(new TokenStore(db).revoke('revoked-elsewhere'), true);
    } finally {
      db.close();
    }
    await waitFor('the stream of the token revoked elsewhere ends', () => b.ended);
    assert.equal(keep.ended, false);
    assert.ok(logs.lines.some((l) => /token was revoked/.test(String(l.msg)) && l.token === 'revoked-elsewhere'));
    await keep.cancel();
  });

  it("ends a revoked token's MCP sessions (and their open streams)", async () => {
    const here = hearth.tokens.create('mcp-here', 'mcp:here').secret;
    const elsewhere = hearth.tokens.create('mcp-elsewhere', 'mcp:elsewhere').secret;
    const kept = hearth.tokens.create('mcp-kept', 'mcp:kept').secret;
    const clients: Client[] = [];
    for (const secret of [here, elsewhere, kept]) {
      const client = new Client({ name: 'revocation-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
      );
      clients.push(client);
    }
    try {
      assert.equal(mcp.sessionCount, 3);
      hearth.tokens.revoke('mcp-here');
      await waitFor('the session of the token revoked here ends', () => mcp.sessionCount === 2);
      const db = openDatabase(hearth.bridge.config.database.path);
      try {
        new TokenStore(db).revoke('mcp-elsewhere');
      } finally {
        db.close();
      }
      await waitFor('the session of the token revoked elsewhere ends', () => mcp.sessionCount === 1);
      assert.ok((await clients[2].listTools()).tools.length > 0, 'the other session still works');
      await assert.rejects(clients[1].listTools(), /401|not valid|Session not found|404/);
    } finally {
      for (const c of clients) await c.close().catch(() => undefined);
    }
  });
});
