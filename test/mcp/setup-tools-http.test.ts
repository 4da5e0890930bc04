// The home's setup tools over MCP's Streamable HTTP with the SDK's own client (the demo home, real broker and
// SQLite): opened at /mcp?setup=1 an owner's session offers them and changes areas and floors through the same
// setters as POST /api/home/...; a guest's token is neither offered them nor let through by name, nor is an owner
// demoted while the session is open; without ?setup=1 nobody is offered them. Bad input is a failed result.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { textOf, useMcpHome } from './helpers.js';

describe('MCP setup tools over HTTP', () => {
  const mcp = useMcpHome();
  const home = mcp.home;
  let ownerSecret: string;
  let guestSecret: string;
  let laterSecret: string;

  async function connect(secret: string, setup: boolean): Promise<Client> {
    const client = mcp.track(new Client({ name: 'setup-http-test', version: '1.0.0' }));
    const url = new URL(mcp.url);
    if (setup) url.searchParams.set('setup', '1');
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const setupNames = async (client: Client) => (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('hearth_home_'));
  const area = (name: string) => home.hearth.home.areas().find((a) => a.name === name);

  before(() => {
    ownerSecret = home.hearth.tokens.create('owner-laptop').secret;
    home.hearth.policy.setRoles('http:owner-laptop', ['owner']);
    guestSecret = home.hearth.tokens.create('guest-tablet').secret;
    home.hearth.policy.setRoles('http:guest-tablet', ['guest']);
    laterSecret = home.hearth.tokens.create('old-phone').secret;
    home.hearth.policy.setRoles('http:old-phone', ['owner']);
  });

  it('an owner at /mcp?setup=1 adds an area with aliases on a floor, and removes both', async () => {
    const owner = await connect(ownerSecret, true);
    const offered = await setupNames(owner);
    for (const n of ['hearth_home_area', 'hearth_home_remove_area', 'hearth_home_floor', 'hearth_home_remove_floor']) assert.ok(offered.includes(n), n);
    const removeTool = (await owner.listTools()).tools.find((t) => t.name === 'hearth_home_remove_area')!;
    assert.equal(removeTool.annotations?.destructiveHint, true);
    assert.ok(!(await call(owner, 'hearth_home_floor', { floor: 'Upstairs', create: true, level: 1 })).isError);
    const added = await call(owner, 'hearth_home_area', { area: 'Study', create: true, floor: 'Upstairs', aliases: ['office'] });
    assert.ok(!added.isError, textOf(added));
    assert.deepEqual([area('Study')?.floor, area('Study')?.aliases], ['Upstairs', ['office']]);
    // Found by its alias, as people say it; placing a device there is the existing tool's.
    assert.ok(!(await call(owner, 'hearth_home_set_area', { device: 'robot_vacuum', area: 'OFFICE' })).isError);
    assert.equal(home.hearth.home.deviceJson(home.hearth.home.device('robot_vacuum')).area, 'Study');
    const taken = await call(owner, 'hearth_home_area', { area: 'Study', aliases: ['the kitchen', 'kitchen'] });
    assert.equal(taken.isError, true);
    assert.match(textOf(taken), /"kitchen" already names the area "Kitchen"/);
    const removed = await call(owner, 'hearth_home_remove_area', { area: 'office' });
    assert.match(textOf(removed), /^Done: removed the area "Study"; 1 device\(s\)/);
    assert.equal(area('Study'), undefined);
    assert.equal(home.hearth.home.deviceJson(home.hearth.home.device('robot_vacuum')).area, 'Living room');
    const floorGone = await call(owner, 'hearth_home_remove_floor', { floor: 'Upstairs' });
    assert.ok(!floorGone.isError, textOf(floorGone));
    assert.equal(
      home.hearth.home.floors().find((f) => f.name === 'Upstairs'),
      undefined,
    );
    const again = await call(owner, 'hearth_home_remove_floor', { floor: 'Upstairs' });
    assert.equal(again.isError, true);
    assert.match(textOf(again), /no floor "Upstairs"/);
  });

  it('a guest at /mcp?setup=1 is offered none and refused by name; an owner demoted mid-session is refused at the next call', async () => {
    const guest = await connect(guestSecret, true);
    assert.deepEqual(await setupNames(guest), []);
    const refused = await call(guest, 'hearth_home_area', { area: 'Kitchen', aliases: ['galley'] });
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /^not allowed: only an owner may arrange the home \(http:guest-tablet is not one\)/);
    assert.deepEqual(area('Kitchen')?.aliases ?? [], []);
    const removal = await call(guest, 'hearth_home_remove_area', { area: 'Kitchen' });
    assert.equal(removal.isError, true);

    const later = await connect(laterSecret, true);
    assert.ok((await setupNames(later)).includes('hearth_home_remove_area'));
    home.hearth.policy.setRoles('http:old-phone', ['guest']);
    const demoted = await call(later, 'hearth_home_floor', { floor: 'Attic', create: true });
    assert.equal(demoted.isError, true);
    assert.match(textOf(demoted), /only an owner may arrange the home/);
    assert.equal(
      home.hearth.home.floors().find((f) => f.name === 'Attic'),
      undefined,
    );
  });

  it('without ?setup=1 an owner is offered none, and calling one is an unknown tool', async () => {
    const owner = await connect(ownerSecret, false);
    assert.deepEqual(await setupNames(owner), []);
    const r = await owner.callTool({ name: 'hearth_home_remove_area', arguments: { area: 'Kitchen' } }).catch((err: Error) => err);
    assert.ok(r instanceof Error || (r as CallToolResult).isError, 'an unknown tool');
    assert.ok(area('Kitchen'));
  });
});
