// Issue 40 (and 43, MCP): an existence oracle. For an entity a guest may not read, /api/history,
// /api/devices/:id/call, the camera frame route, /api/policy/test and MCP resources/read answered 403 (or -32600)
// naming the rule, while an unknown id got 404 (or -32002): the difference told a guest what exists. Now
// read-denied and unknown look the same to that caller on every surface (status, body, words but the id), MCP
// answers -32002 "resource not found" for both, and the audit still records each refused read. Real broker
// (aedes), real SQLite file, real HTTP server with MCP mounted, the MCP SDK's own client.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';
import { GUESTS_DO_NOT_SEE_FRONT_DOOR } from './helpers.js';

const LOCK = 'front_door.lock';
const CAMERA = 'front_door.camera';
/** Ids that are not in the home at all, as long as the real ones. */
const NO_LOCK = 'front_door.lokc';
const NO_CAMERA = 'front_door.camrea';

describe('security: read-denied and unknown look the same to the caller', () => {
  const home = useHttpHome({ mcp: true, tokens: OWNER_AND_GUEST });
  const guest = (method: string, path: string, body?: unknown) =>
    home.api(method, path, { token: home.secret('guest'), timeoutMs: 10_000, strictJson: true, ...(body === undefined ? {} : { body }) });

  before(() => {
    home.hearth.policy.add(GUESTS_DO_NOT_SEE_FRONT_DOOR);
  });

  /** The audit rows of refused reads of `entityId` by the guest since `afterId`. */
  const refusedReads = (entityId: string, afterId: number) =>
    home.hearth.audit.list({ principal: 'http:guest', entityId, afterId }).filter((r) => r.action === 'read' && r.outcome === 'denied');
  const lastId = () => home.hearth.audit.list({ order: 'desc', limit: 1 })[0]?.id ?? 0;

  /** Both answers, the id of each replaced by the same word: they must be equal. */
  async function same(
    surface: string,
    ask: (id: string) => Promise<{ status: number; json: any }>,
    denied: string,
    unknown: string,
    status = 404,
  ): Promise<void> {
    const before = lastId();
    const a = await ask(denied);
    const b = await ask(unknown);
    const masked = (r: { status: number; json: any }, id: string) => ({ status: r.status, json: JSON.parse(JSON.stringify(r.json).replaceAll(id, '<id>')) });
    assert.deepEqual(masked(a, denied), masked(b, unknown), `${surface}: the denied and the unknown id are answered alike`);
    assert.equal(a.status, status, `${surface}: ${JSON.stringify(a.json)}`);
    assert.doesNotMatch(JSON.stringify(a.json), /guests do not see|not allowed|rule/, `${surface} names no rule`);
    const rows = refusedReads(denied, before);
    assert.equal(rows.length, 1, `${surface}: one refused read in the audit`);
    assert.equal(rows[0].tool, surface);
    assert.equal(rows[0].decision, 'deny');
    assert.match(rows[0].reason, /guests do not see the front door/);
  }

  it('GET /api/history', async () => {
    await same('GET /api/history', (id) => guest('GET', `/api/history?entity=${id}&since=-1h`), LOCK, NO_LOCK);
  });

  it('POST /api/devices/:id/call', async () => {
    await same('POST /api/devices/:id/call', (id) => guest('POST', `/api/devices/${id}/call`, { args: { action: 'unlock' } }), LOCK, NO_LOCK);
    assert.equal(home.hearth.bridge.cache.get(LOCK)?.value, 'locked', 'and nothing was done');
  });

  it('GET /api/devices/:id/frame', async () => {
    await same('GET /api/devices/:id/frame', (id) => guest('GET', `/api/devices/${id}/frame`), CAMERA, NO_CAMERA);
    // A denied entity that is no camera is not found either (its kind is not told).
    await same('GET /api/devices/:id/frame', (id) => guest('GET', `/api/devices/${id}/frame`), LOCK, NO_LOCK);
  });

  it('POST /api/policy/test', async () => {
    // An entity named in the arguments of a tool over many.
    await same('POST /api/policy/test', (id) => guest('POST', '/api/policy/test', { tool: 'get_state', args: { entity: id } }), LOCK, NO_LOCK);
    // An entity's own tool: as a tool that does not exist.
    const lockTool = home.hearth.tools.all().find((t) => t.meta.entityIds.length === 1 && t.meta.entityIds[0] === LOCK && t.capability === 'actuator')!;
    const noTool = `${lockTool.name.slice(0, -1)}x`;
    const before = lastId();
    const a = await guest('POST', '/api/policy/test', { tool: lockTool.name, args: { action: 'unlock' } });
    const b = await guest('POST', '/api/policy/test', { tool: noTool, args: { action: 'unlock' } });
    assert.equal(a.status, 404, JSON.stringify(a.json));
    assert.deepEqual(JSON.parse(JSON.stringify(a.json).replaceAll(lockTool.name, '<tool>')), JSON.parse(JSON.stringify(b.json).replaceAll(noTool, '<tool>')));
    assert.equal(refusedReads(LOCK, before).length, 1);
    // The owner still tests it.
    const owner = await home.api('POST', '/api/policy/test', { token: home.secret('owner'), body: { tool: lockTool.name, args: { action: 'unlock' } } });
    assert.equal(owner.status, 200, owner.text);
  });

  it('MCP resources/read (the SDK client): -32002 "resource not found" for both, the same words', async () => {
    const client = await home.mcpClient(home.secret('guest'), 'existence-test');
    const error = async (uri: string) => {
      try {
        await client.readResource({ uri });
      } catch (err) {
        assert.ok(err instanceof McpError, String(err));
        return { status: err.code, json: { message: err.message, data: err.data } };
      }
      assert.fail(`${uri} was read`);
    };
    // The status compared is the JSON-RPC error code.
    await same('resources/read', (id) => error(`hearth://entity/${id}`), LOCK, NO_LOCK, -32002);
    await same('resources/read', (id) => error(`hearth://camera/${id}/frame`), CAMERA, NO_CAMERA, -32002);
    const denied = await error(`hearth://entity/${LOCK}`);
    assert.equal(denied.json.message, `MCP error -32002: no entity "${LOCK}" that you may read; resources/list shows them`);
  });
});
