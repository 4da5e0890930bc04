// MCP as the current SDK and spec expect it, with the SDK's own client over
// Streamable HTTP on the demo home (real broker, simulator, SQLite): tool
// titles, read tools' output schema and structured content, resource links
// from actuator results, approvals asked through elicitation (an approver's
// yes unlocks, a non-approver's does not, a client without elicitation gets
// the held result), and completions for the resource templates' {id}.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type CallToolResult, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { createExternalTool } from '../../src/tools/external-tools.js';
import { waitFor } from '../helpers/wait.js';
import { textOf, useMcpHome } from './helpers.js';

describe('MCP conventions (titles, structured content, resource links, elicitation, completions)', () => {
  const mcp = useMcpHome();
  const home = mcp.home;
  const secrets: Record<string, string> = {};

  /** A client; with `answer`, it declares elicitation and answers every question so, recording them. */
  async function connect(who: string, answer?: (req: ElicitRequest) => ElicitResult): Promise<{ client: Client; asked: ElicitRequest['params'][] }> {
    const asked: ElicitRequest['params'][] = [];
    const client = mcp.track(new Client({ name: `test-${who}`, version: '1.0.0' }, answer ? { capabilities: { elicitation: {} } } : {}));
    if (answer) {
      client.setRequestHandler(ElicitRequestSchema, (req) => {
        asked.push(req.params);
        return answer(req);
      });
    }
    const transport = new StreamableHTTPClientTransport(mcp.url, { requestInit: { headers: { authorization: `Bearer ${secrets[who]}` } } });
    await client.connect(transport);
    return { client, asked };
  }
  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })) as CallToolResult;
  const lockState = () => home.hearth.bridge.cache.get('front_door.lock')?.value;

  before(async () => {
    for (const [name, roles] of [
      ['owner', ['owner']],
      ['family', ['family']],
      ['guest', ['guest']],
    ] as const) {
      secrets[name] = home.hearth.tokens.create(name).secret;
      home.hearth.policy.setRoles(`http:${name}`, [...roles]);
    }
    // Family may work the front door lock (unlocking still needs an approver), and approve nothing.
    home.hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: 'lock', action: 'actuate', effect: 'allow', priority: 10 });
    // Family may switch the kitchen light but not read it: a result links no resource it could not read.
    home.hearth.policy.add({ subject: 'role:family', targetType: 'entity', target: 'kitchen_light.light', action: 'actuate', effect: 'allow', priority: 10 });
    home.hearth.policy.add({ subject: 'role:family', targetType: 'entity', target: 'kitchen_light.light', action: 'read', effect: 'deny', priority: 10 });
    // Guests may not read the living-room lamp.
    home.hearth.policy.add({ subject: 'role:guest', targetType: 'entity', target: 'living_room_lamp.lamp', action: 'read', effect: 'deny', priority: 10 });
    await waitFor('the front door lock reports its state', () => lockState() !== undefined, 10_000);
  });

  it('every tool has a title; device read tools declare an output schema, actuators none', async () => {
    const { client } = await connect('owner');
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.ok(
      tools.every((t) => typeof t.title === 'string' && t.title.length > 0),
      tools
        .filter((t) => !t.title)
        .map((t) => t.name)
        .join(),
    );
    assert.equal(byName.get('get_state')?.title, 'Get state');
    // A title is for display: the device's name, cleaned; the description a model reads marks it as data.
    assert.equal(byName.get('living_room_lamp')?.title, 'Living room lamp');
    assert.match(byName.get('living_room_lamp')?.description ?? '', /"Living room lamp"/);
    for (const name of ['get_state', 'living_room_temperature', 'front_door_camera', 'living_room_lamp', 'front_door_lock', 'garage_door']) {
      assert.equal(byName.get(name)?.outputSchema?.type, 'object', name);
    }
  });

  it('output schemas use the portable forms: one type per property, nullable as anyOf', async () => {
    const { client } = await connect('owner');
    const { tools } = await client.listTools();
    const problems: string[] = [];
    const walk = (schema: unknown, where: string): void => {
      if (!schema || typeof schema !== 'object') {
        problems.push(`${where}: not a schema`);
        return;
      }
      const s = schema as Record<string, unknown>;
      if (Array.isArray(s.type)) problems.push(`${where}: a type array ${JSON.stringify(s.type)}`);
      if (s.type === undefined && !Array.isArray(s.anyOf)) problems.push(`${where}: no type`);
      if (Array.isArray(s.anyOf)) for (const [i, alt] of s.anyOf.entries()) walk(alt, `${where}.anyOf[${i}]`);
      if (s.properties) for (const [k, v] of Object.entries(s.properties as Record<string, unknown>)) walk(v, `${where}.${k}`);
      if (s.items) walk(s.items, `${where}[]`);
    };
    let checked = 0;
    for (const t of tools) {
      if (!t.outputSchema) continue;
      checked++;
      walk(t.outputSchema, t.name);
    }
    assert.ok(checked >= 10, `output schemas checked: ${checked}`);
    assert.deepEqual(problems, []);
  });

  it("an actuator's result carries structuredContent (outcome, entity, state, audit id), and the same JSON in a text block", async () => {
    const { client } = await connect('owner');
    const { tools } = await client.listTools(); // the SDK client checks results against the output schemas
    const ajv = new Ajv({ strict: false });
    const validate = ajv.compile(tools.find((t) => t.name === 'living_room_lamp')!.outputSchema!);
    const on = await call(client, 'living_room_lamp', { action: 'turn_on' });
    assert.ok(!on.isError, textOf(on));
    assert.ok(validate(on.structuredContent), ajv.errorsText(validate.errors));
    const s = on.structuredContent as { outcome: string; entity: string; state: { value: unknown }; auditId: number };
    assert.equal(s.outcome, 'confirmed');
    assert.equal(s.entity, 'living_room_lamp.lamp');
    assert.equal(s.state.value, 'on');
    assert.equal(home.hearth.audit.get(s.auditId)?.tool, 'living_room_lamp');
    const texts = on.content.filter((c) => c.type === 'text').map((c) => (c as { text: string }).text);
    assert.match(texts[0], /^confirmed/, 'the words come first');
    assert.deepEqual(JSON.parse(texts.at(-1)!), on.structuredContent);

    // A caller that may not read the entity gets no state of it.
    const { client: family } = await connect('family');
    const kitchen = await call(family, 'kitchen_light', { action: 'turn_off' });
    assert.ok(!kitchen.isError, textOf(kitchen));
    assert.deepEqual((kitchen.structuredContent as { state: unknown; entity: string }).state, null);
    await call(client, 'living_room_lamp', { action: 'turn_off' });
  });

  it('read tools return structuredContent beside the text, valid against their output schema', async () => {
    const { client } = await connect('owner');
    const { tools } = await client.listTools(); // the SDK client checks results against these schemas too
    const ajv = new Ajv({ strict: false });
    for (const [name, args, ids] of [
      ['get_state', { area: 'Living room' }, ['living_room_lamp.lamp']],
      ['living_room_temperature', {}, null],
      ['front_door_camera', {}, ['front_door.camera']],
    ] as const) {
      const result = await call(client, name, args);
      assert.ok(!result.isError, textOf(result));
      assert.ok(textOf(result).length > 0, `${name} keeps its text`);
      const validate = ajv.compile(tools.find((t) => t.name === name)!.outputSchema!);
      assert.ok(validate(result.structuredContent), `${name}: ${ajv.errorsText(validate.errors)}`);
      const entities = (result.structuredContent as { entities: Array<{ id: string; kind: string }> }).entities;
      assert.ok(entities.length > 0, name);
      if (ids)
        for (const id of ids)
          assert.ok(
            entities.some((e) => e.id === id),
            `${name} has ${id}: ${entities.map((e) => e.id).join()}`,
          );
    }
    const temperature = (await call(client, 'living_room_temperature')).structuredContent as { entities: Array<{ kind: string; value: unknown }> };
    assert.equal(temperature.entities.length, 1);
    assert.equal(temperature.entities[0].kind, 'sensor');
  });

  it("get_history's structured content carries the changes its text lists, newest first", async () => {
    const { client } = await connect('owner');
    const { tools } = await client.listTools(); // the SDK client checks the result against this schema
    const validate = new Ajv({ strict: false }).compile(tools.find((t) => t.name === 'get_history')!.outputSchema!);
    const now = Date.now();
    const states = ['on', 'off', 'on', 'off'];
    home.hearth.history.write(states.map((state, i) => ({ entityId: 'living_room_lamp.lamp', ts: now - (40 - i * 10) * 60_000, state })));
    const result = await call(client, 'get_history', { entity: 'living_room_lamp.lamp', since: '-1h' });
    assert.ok(!result.isError, textOf(result));
    assert.match(textOf(result), /: 4 changes, newest first:/);
    assert.ok(validate(result.structuredContent), JSON.stringify(validate.errors));
    const s = result.structuredContent as { entity: string; type: string; count: number; changes: Array<{ at: string; value: unknown }> };
    assert.deepEqual([s.entity, s.type, s.count], ['living_room_lamp.lamp', 'state', 4]);
    assert.deepEqual(
      s.changes.map((c) => c.value),
      [...states].reverse(),
    );
    assert.equal(s.changes[0].at, new Date(now - 10 * 60_000).toISOString());
    const texts = result.content.filter((c) => c.type === 'text').map((c) => (c as { text: string }).text);
    assert.deepEqual(JSON.parse(texts.at(-1)!), result.structuredContent, 'the extra text block is the same data');

    const numbers = await call(client, 'get_history', { entity: 'living_room_climate.temperature', since: '-1h' });
    assert.ok(!numbers.isError, textOf(numbers));
    assert.ok(validate(numbers.structuredContent), JSON.stringify(validate.errors));
    assert.equal(
      (numbers.structuredContent as { count: number }).count,
      /no changes recorded/.test(textOf(numbers)) ? 0 : Number(/: (\d+) readings/.exec(textOf(numbers))?.[1]),
    );
  });

  it("control_group's structured content names the audit row of each member it switched", async () => {
    const { client } = await connect('owner');
    // The kitchen light and the living-room lamp (a switch): a call on two members writes two audit rows.
    const result = await call(client, 'control_group', { action: 'turn_on', kind: 'all', entities: ['kitchen_light.light', 'living_room_lamp.lamp'] });
    assert.ok(!result.isError, textOf(result));
    const s = result.structuredContent as { outcome: string; auditIds: number[]; members: Array<{ entity: string; outcome: string; auditId: number | null }> };
    assert.ok(s.members.length >= 2, JSON.stringify(s));
    assert.equal(s.auditIds.length, s.members.length);
    for (const m of s.members) {
      const row = home.hearth.audit.get(m.auditId!);
      assert.ok(row, `${m.entity} has its audit row`);
      assert.deepEqual([row.entityId, row.principal, row.outcome], [m.entity, 'http:owner', m.outcome]);
    }
    await call(client, 'control_group', { action: 'turn_off', kind: 'all', entities: s.members.map((m) => m.entity) });
  });

  it('a guest gets no structured state of an entity it may not read', async () => {
    const { client } = await connect('guest');
    const result = await call(client, 'get_state', { area: 'Living room' });
    assert.ok(!result.isError, textOf(result));
    const ids = (result.structuredContent as { entities: Array<{ id: string }> }).entities.map((e) => e.id);
    assert.ok(ids.length > 0);
    assert.ok(!ids.includes('living_room_lamp.lamp'), ids.join());
  });

  it("an actuator's result links the entity's resource, which the client can read", async () => {
    const { client } = await connect('owner');
    const on = await call(client, 'living_room_lamp', { action: 'turn_on' });
    assert.ok(!on.isError, textOf(on));
    assert.match(textOf(on), /^confirmed/);
    const link = on.content.find((c) => c.type === 'resource_link');
    assert.ok(link && link.type === 'resource_link', JSON.stringify(on.content));
    assert.equal(link.uri, 'hearth://entity/living_room_lamp.lamp');
    const read = await client.readResource({ uri: link.uri });
    const state = JSON.parse((read.contents[0] as { text: string }).text) as { id: string; value: unknown };
    assert.equal(state.id, 'living_room_lamp.lamp');
    await call(client, 'living_room_lamp', { action: 'turn_off' });

    const { client: family } = await connect('family');
    const kitchen = await call(family, 'kitchen_light', { action: 'turn_on' });
    assert.ok(!kitchen.isError, textOf(kitchen));
    assert.equal(
      kitchen.content.some((c) => c.type === 'resource_link'),
      false,
      'no link to a resource the caller may not read',
    );
    // As for an entity that does not exist: MCP's "resource not found".
    await assert.rejects(family.readResource({ uri: 'hearth://entity/kitchen_light.light' }), /-32002: no entity "kitchen_light.light" that you may read/);
  });

  it('a client without elicitation gets the held result naming the approval (nothing is asked)', async () => {
    const { client } = await connect('owner');
    const held = await call(client, 'front_door_lock', { action: 'unlock' });
    assert.equal(held.isError, true);
    const approvalId = String(held._meta?.['hearth/approvalId']);
    assert.match(textOf(held), new RegExp(`^needs approval: .*Approval ${approvalId} is waiting`));
    assert.equal(home.hearth.approvals.get(approvalId)?.status, 'pending');
    assert.equal(
      held.content.some((c) => c.type === 'resource_link'),
      false,
      'a held call links nothing',
    );
    assert.ok(home.hearth.approvals.deny(approvalId, 'cli:test'));
  });

  it('a principal that may not approve is not asked: it gets the held result at once, and nothing unlocks', async () => {
    const before = lockState();
    const { client, asked } = await connect('family', () => ({ action: 'accept', content: { approve: true } }));
    const held = await call(client, 'front_door_lock', { action: 'unlock' });
    assert.equal(asked.length, 0, 'no question for someone whose answer could not count');
    assert.equal(held.isError, true);
    const approvalId = String(held._meta?.['hearth/approvalId']);
    assert.match(textOf(held), new RegExp(`^needs approval: .*Approval ${approvalId} is waiting`));
    assert.match(textOf(held), /approvers: role:owner/);
    assert.equal(home.hearth.approvals.get(approvalId)?.status, 'pending');
    assert.equal(lockState(), before);
    assert.ok(!home.hearth.audit.tail(5).some((r) => r.principal === 'http:family' && r.tool === 'front_door_lock' && r.outcome === 'confirmed'));
    assert.ok(home.hearth.approvals.deny(approvalId, 'cli:test'));
  });

  it("an approver's yes in the client grants the approval: the unlock runs once, audited", async () => {
    const { client, asked } = await connect('owner', () => ({ action: 'accept', content: { approve: true } }));
    const done = await call(client, 'front_door_lock', { action: 'unlock' });
    assert.equal(asked.length, 1);
    assert.ok(!done.isError, textOf(done));
    assert.match(textOf(done), /^confirmed: .*unlocked/i);
    const row = home.hearth.audit.tail(1)[0];
    assert.deepEqual([row.principal, row.tool, row.outcome], ['http:owner', 'front_door_lock', 'confirmed']);
    const approvalId = /approved: ([0-9a-f]+)/.exec(row.reason)?.[1];
    assert.ok(approvalId, row.reason);
    const approval = home.hearth.approvals.get(approvalId)!;
    assert.deepEqual([approval.status, approval.decidedBy], ['used', 'http:owner']);
    assert.match(String(asked[0].message), new RegExp(`approval ${approvalId}`));
    const lock = await call(client, 'front_door_lock', { action: 'lock' });
    assert.match(textOf(lock), /^confirmed/);
    assert.equal(asked.length, 1, 'locking asks nobody');
  });

  it("an approver's no in the client refuses the call: the approval is denied, and the refusal is an audit row", async () => {
    const { client } = await connect('owner', () => ({ action: 'accept', content: { approve: false } }));
    const refused = await call(client, 'front_door_lock', { action: 'unlock' });
    assert.equal(refused.isError, true);
    const m = /^not done: http:owner refused approval ([0-9a-f]+) in the client\.$/.exec(textOf(refused));
    assert.ok(m, textOf(refused));
    assert.equal(home.hearth.approvals.get(m[1])?.status, 'denied');
    const row = home.hearth.audit.tail(1)[0];
    assert.deepEqual([row.principal, row.tool, row.action, row.outcome], ['http:owner', 'front_door_lock', 'deny_approval', 'denied']);
  });

  it("a flow's tool is offered only to principals whose rules could allow it", async () => {
    const { hearth } = home;
    const deps = { policy: hearth.policy, audit: hearth.audit, approvals: hearth.approvals, log: home.logs.log };
    const announce = createExternalTool(
      {
        name: 'announce',
        description: 'Say something on the house speakers.',
        parameters: { type: 'object', properties: { text: { type: 'string' } } },
        capability: 'actuator',
        source: 'flow:test',
        handler: () => 'said',
      },
      deps,
    );
    const chime = createExternalTool(
      {
        name: 'chime',
        description: 'Ring a chime.',
        parameters: { type: 'object', properties: { action: { type: 'string', enum: ['press'] } }, required: ['action'] },
        capability: 'actuator',
        source: 'flow:test',
        handler: () => 'rang',
      },
      deps,
    );
    const removals = [hearth.tools.external.add(announce), hearth.tools.external.add(chime)];
    const rules: number[] = [];
    try {
      const names = async (who: string) => (await (await connect(who)).client.listTools()).tools.map((t) => t.name);
      // Family's rules allow a lock and a light (an entity and a kind): nothing a flow's tool could ever match.
      assert.ok(!(await names('family')).includes('announce'));
      assert.ok(!(await names('family')).includes('chime'));
      assert.ok((await names('owner')).includes('announce'), 'owners may act on anything');
      rules.push(hearth.policy.add({ subject: 'role:family', targetType: 'tool', target: 'announce', action: 'actuate', effect: 'allow', priority: 10 }).id);
      rules.push(hearth.policy.add({ subject: 'role:family', targetType: 'any', target: '*', action: 'press', effect: 'allow', priority: 10 }).id);
      const now = await names('family');
      assert.ok(now.includes('announce') && now.includes('chime'), now.join());
    } finally {
      for (const id of rules) hearth.policy.remove(id);
      for (const remove of removals) remove();
    }
  });

  it('completes the {id} of the resource templates with what the principal may read', async () => {
    const { client } = await connect('owner');
    assert.deepEqual(client.getServerCapabilities()?.completions, {});
    const entity = await client.complete({ ref: { type: 'ref/resource', uri: 'hearth://entity/{id}' }, argument: { name: 'id', value: 'living' } });
    assert.ok(entity.completion.values.includes('living_room_lamp.lamp'), entity.completion.values.join());
    assert.ok(entity.completion.values.every((v) => v.startsWith('living')));
    const frames = await client.complete({ ref: { type: 'ref/resource', uri: 'hearth://camera/{id}/frame' }, argument: { name: 'id', value: '' } });
    assert.deepEqual(frames.completion.values, ['front_door.camera']);

    const { client: guest } = await connect('guest');
    const forGuest = await guest.complete({ ref: { type: 'ref/resource', uri: 'hearth://entity/{id}' }, argument: { name: 'id', value: 'living_room' } });
    assert.ok(forGuest.completion.values.length > 0);
    assert.ok(!forGuest.completion.values.includes('living_room_lamp.lamp'), 'no completion for an entity the guest may not read');

    await assert.rejects(
      client.complete({ ref: { type: 'ref/resource', uri: 'hearth://nothing/{id}' }, argument: { name: 'id', value: '' } }),
      /no resource template "hearth:\/\/nothing\/\{id\}"; the templates are hearth:\/\/entity\/\{id\} and/,
    );
    await assert.rejects(client.complete({ ref: { type: 'ref/prompt', name: 'x' }, argument: { name: 'id', value: '' } }), /Hearth has no prompts/);
  });
});
