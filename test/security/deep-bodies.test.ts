// Issue 27: a deep (100,000 levels) but small JSON body answered 500 "Maximum call stack size exceeded" on four
// routes. Every body under the size limit gets a 400 (or a JSON-RPC parse error) that names the problem, on
// every door that parses JSON: the HTTP API and the OpenAI endpoint, MCP over HTTP, and a Wyoming frame.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrameError, FrameReader } from '../../src/wyoming/framing.js';
import { useHttpHome } from '../helpers/http-home.js';

const deep = (levels: number) => `{"a":${'['.repeat(levels)}1${']'.repeat(levels)}}`;

describe('security: a deep but small JSON body is a 400 naming the problem, never a 500', () => {
  const home = useHttpHome({ mcp: true, tokens: { deep: { name: 'deep', principal: 'http:deep', roles: ['owner'] } } });

  const post = (path: string, body: string) =>
    fetch(`${home.server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${home.secret('deep')}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body,
      signal: AbortSignal.timeout(30_000),
    });

  for (const path of ['/api/tools/kitchen_light/call', '/v1/chat/completions', '/api/policy/test', '/api/approvals/x']) {
    it(`${path}: 100,000 levels in 200 KB -> 400 too_deep`, async () => {
      const r = await post(path, deep(100_000));
      const text = await r.text();
      assert.equal(r.status, 400, text);
      assert.match(text, /nests deeper than 400 levels/);
      assert.doesNotMatch(text, /call stack/i);
    });
  }

  it('MCP over HTTP: a JSON-RPC parse error (-32700) naming the depth', async () => {
    const r = await post('/mcp', deep(100_000));
    const body = (await r.json()) as { error?: { code: number; message: string } };
    assert.equal(r.status, 400);
    assert.equal(body.error?.code, -32700);
    assert.match(body.error?.message ?? '', /nests deeper than 400 levels/);
  });

  it('arguments a little too deep for a tool still reach it: refused there, with an audit row', async () => {
    const r = await post('/api/tools/kitchen_light/call', JSON.stringify({ args: { action: 'turn_on', brightness: JSON.parse(deep(100)) } }));
    const text = await r.text();
    assert.match(text, /nested more than \d+ levels/, text);
    const [row] = home.hearth.audit.tail(1);
    assert.equal(row?.tool, 'kitchen_light', 'the refused call has its row');
    assert.match(row.error ?? '', /nested more than/);
  });

  it('a Wyoming frame whose header nests 30,000 levels is a FrameError, not a crash', () => {
    const reader = new FrameReader();
    assert.throws(
      () => reader.push(Buffer.from(`{"type":"transcript","data":${deep(30_000)}}\n`)),
      (err: unknown) => {
        assert.ok(err instanceof FrameError);
        assert.match(err.message, /nests deeper than 400 levels/);
        return true;
      },
    );
  });
});
