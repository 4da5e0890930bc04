// Flow-provided tools over the daemon's HTTP API, on a real demo home and a
// real HTTP server: a provider stream registers a tool, another principal
// calls it through POST /api/tools/:name/call (policy and audit in front), the
// provider answers by call id; withdrawn calls are pushed as cancels; a
// dropped stream removes the tool and fails its waiting call. Bad
// definitions and answers, a principal that may not provide, another token
// answering, and names held by a device or another provider are refused.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome } from '../helpers/http-home.js';

const ANNOUNCE = {
  name: 'announce',
  description: 'Say a sentence on the house speakers.',
  parameters: { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'], additionalProperties: false },
  capability: 'actuator',
  timeoutMs: 20_000,
};

interface ProviderEvent {
  event: string;
  data: any;
}

/** An open provider stream: its events as they come, and a way to drop it. */
interface Provider {
  status: number;
  json?: any;
  events: ProviderEvent[];
  next(event: string, accept?: (d: any) => boolean): Promise<any>;
  ended: Promise<void>;
  drop(): void;
}

describe('HTTP flow tools API', () => {
  const home = useHttpHome({
    tokens: {
      provider: { name: 'node-red', principal: 'http:node-red', roles: ['owner'] },
      otherOwner: { name: 'other-red', principal: 'http:other-red', roles: ['owner'] },
      caller: { name: 'caller', principal: 'http:caller', roles: ['owner'] },
      guest: { name: 'guest', principal: 'http:guest' },
    },
  });
  const open: Provider[] = [];
  const api = (method: string, path: string, token: string | null, body?: unknown) => home.api(method, path, { token, body, timeoutMs: 30_000 });

  async function provide(token: string | null, body: unknown): Promise<Provider> {
    const abort = new AbortController();
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${home.server.url}/api/flow-tools/providers`, { method: 'POST', headers, body: JSON.stringify(body), signal: abort.signal });
    const events: ProviderEvent[] = [];
    const waiters: Array<() => void> = [];
    if (res.status !== 200) {
      const json = await res.json();
      return { status: res.status, json, events, next: () => Promise.reject(new Error('no stream')), ended: Promise.resolve(), drop: () => undefined };
    }
    const ended = (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true });
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1];
            if (event && data) events.push({ event, data: JSON.parse(data) });
            for (const w of waiters.splice(0)) w();
          }
        }
      } catch {
        // dropped by the test
      }
      for (const w of waiters.splice(0)) w();
    })();
    let done = false;
    void ended.then(() => (done = true));
    const provider: Provider = {
      status: res.status,
      events,
      ended,
      drop: () => abort.abort(),
      async next(event, accept = () => true) {
        const seen = new Set<ProviderEvent>();
        for (;;) {
          const hit = events.find((e) => !seen.has(e) && e.event === event && accept(e.data));
          if (hit) return hit.data;
          if (done) throw new Error(`the stream ended without a ${event} event; saw ${JSON.stringify(events)}`);
          await new Promise<void>((r) => {
            waiters.push(r);
            setTimeout(r, 1000);
          });
        }
      },
    };
    open.push(provider);
    return provider;
  }

  const toolNames = async (token: string) => ((await api('GET', '/api/tools', token)).json as Array<{ name: string }>).map((t) => t.name);

  before(() => {
    // Registered after the server's, so the streams are dropped before the server closes.
    home.cleanup(() => {
      for (const p of open) p.drop();
    });
    home.hearth.policy.add({
      subject: 'role:owner',
      targetType: 'tool',
      target: 'announce|chime|doorbell',
      action: 'actuate',
      effect: 'allow',
      note: 'test: owners may announce',
    });
  });

  it('registers a tool another principal calls through policy and audit; the provider answers by call id', async () => {
    const provider = await provide(home.secret('provider'), { source: 'flow:t1', tools: [ANNOUNCE] });
    assert.equal(provider.status, 200, JSON.stringify(provider.json));
    const ready = await provider.next('ready');
    assert.deepEqual(ready.tools, ['announce']);
    const listed = (await api('GET', '/api/tools', home.secret('caller'))).json.find((t: { name: string }) => t.name === 'announce');
    assert.equal(listed.description, ANNOUNCE.description);
    assert.deepEqual(listed.parameters.required, ['text']);
    const mine = await api('GET', '/api/flow-tools', home.secret('provider'));
    assert.deepEqual(
      mine.json.map((p: { tools: string[] }) => p.tools),
      [['announce']],
    );

    const calling = api('POST', '/api/tools/announce/call', home.secret('caller'), { args: { text: 'dinner is ready' } });
    const call = await provider.next('call');
    assert.equal(call.tool, 'announce');
    assert.deepEqual(call.args, { text: 'dinner is ready' });
    assert.equal(call.principal, 'http:caller');
    assert.equal(call.timeoutMs, 20_000);
    // Another token, even an owner's, cannot answer it; nor can the caller.
    for (const token of [home.secret('otherOwner'), home.secret('caller')]) {
      const stranger = await api('POST', `/api/flow-tools/calls/${call.id}/result`, token, { text: 'hijacked' });
      assert.equal(stranger.status, 404, stranger.text);
    }
    const answered = await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), {
      text: 'spoken on 2 speakers',
      details: { speakers: 2 },
    });
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.json.tool, 'announce');
    const result = await calling;
    assert.equal(result.status, 200, result.text);
    assert.equal(result.json.text, 'spoken on 2 speakers');
    assert.equal(result.json.isError, false);
    assert.equal(result.json.details.speakers, 2);
    const row = home.hearth.audit.get(result.json.details.auditId)!;
    assert.equal(row.outcome, 'confirmed');
    assert.equal(row.principal, 'http:caller');
    assert.match(row.reason, /tool of flow:t1 of http:node-red/);
    // Answered once: a second answer finds nothing.
    assert.equal((await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), { text: 'again' })).status, 404);
    provider.drop();
    await waitFor('the tool is gone', async () => !(await toolNames(home.secret('caller'))).includes('announce'));
  });

  it('a withdrawn call is pushed as a cancel: timeout (unconfirmed row) and an interrupted call', async () => {
    const provider = await provide(home.secret('provider'), { source: 'flow:t2', tools: [{ ...ANNOUNCE, timeoutMs: 300 }] });
    await provider.next('ready');
    const r = await api('POST', '/api/tools/announce/call', home.secret('caller'), { args: { text: 'late' } });
    const call = await provider.next('call');
    const cancel = await provider.next('cancel', (d) => d.id === call.id);
    assert.equal(cancel.reason, 'timeout');
    assert.match(r.json.text, /^unconfirmed: announce did not answer within 300 ms/);
    assert.equal(home.hearth.audit.get(r.json.details.auditId)!.outcome, 'unconfirmed');
    assert.equal((await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), { text: 'too late' })).status, 404);
    provider.drop();
    await waitFor('the tool is gone', () => !home.hearth.tools.get('announce'));

    const again = await provide(home.secret('provider'), { source: 'flow:t2', tools: [ANNOUNCE] });
    await again.next('ready');
    const stop = new AbortController();
    const calling = home.hearth.tools.call('announce', { text: 'stop me' }, { id: 'chat:tester', roles: ['owner'] }, { signal: stop.signal });
    const second = await again.next('call');
    stop.abort();
    const interrupted = await again.next('cancel', (d) => d.id === second.id);
    assert.equal(interrupted.reason, 'interrupted');
    const result = await calling;
    assert.equal(result.isError, true);
    assert.match(result.text!, /cancelled while running/);
    assert.equal(home.hearth.audit.get(result.details!.auditId as number)!.outcome, 'interrupted');
    again.drop();
    await waitFor('the tool is gone', () => !home.hearth.tools.get('announce'));
  });

  it('a dropped stream removes the tools at once and fails the waiting call, audited as failed', async () => {
    const provider = await provide(home.secret('provider'), { source: 'flow:t3', tools: [ANNOUNCE] });
    await provider.next('ready');
    const calling = api('POST', '/api/tools/announce/call', home.secret('caller'), { args: { text: 'never answered' } });
    await provider.next('call');
    provider.drop();
    const r = await calling;
    assert.equal(r.json.isError, true);
    assert.match(r.json.text, /the Node-RED flow that provides tool announce disconnected/);
    const row = home.hearth.audit.get(r.json.details.auditId)!;
    assert.equal(row.outcome, 'failed');
    assert.match(String(row.error), /disconnected/);
    assert.ok(!(await toolNames(home.secret('caller'))).includes('announce'));
    const gone = await api('POST', '/api/tools/announce/call', home.secret('caller'), { args: { text: 'anyone?' } });
    assert.equal(gone.status, 404, gone.text);
  });

  it('a read deny holds: the flow never sees the call, the refusal is audited', async () => {
    home.hearth.policy.add({
      subject: 'http:caller',
      targetType: 'tool',
      target: 'house_note',
      action: '*',
      effect: 'deny',
      note: 'test: no notes for the caller',
    });
    const provider = await provide(home.secret('provider'), {
      source: 'flow:t4',
      tools: [{ name: 'house_note', description: 'Read the note on the fridge.', parameters: { type: 'object', properties: {} }, capability: 'read' }],
    });
    await provider.next('ready');
    const r = await api('POST', '/api/tools/house_note/call', home.secret('caller'), { args: {} });
    // A principal the policy never lets use it is not shown it, and is refused before the pipeline.
    assert.equal(r.status, 403, r.text);
    assert.ok(!(await toolNames(home.secret('caller'))).includes('house_note'));
    const direct = await home.hearth.tools.call('house_note', {}, { id: 'http:caller', roles: ['owner'] });
    assert.equal(direct.isError, true);
    assert.match(direct.text!, /not allowed/);
    assert.equal(home.hearth.audit.get(direct.details!.auditId as number)!.outcome, 'denied');
    assert.ok(!provider.events.some((e) => e.event === 'call'), 'the flow never saw the call');
    provider.drop();
  });

  it('refuses a principal that may not provide, and no token; nothing is registered', async () => {
    const guest = await provide(home.secret('guest'), { source: 'flow:g', tools: [{ ...ANNOUNCE, name: 'guest_tool' }] });
    assert.equal(guest.status, 403);
    assert.match(guest.json.error.message, /http:guest may not provide tools: only a principal with the owner role/);
    const anonymous = await provide(null, { source: 'flow:g', tools: [{ ...ANNOUNCE, name: 'guest_tool' }] });
    assert.equal(anonymous.status, 401);
    assert.equal(home.hearth.tools.get('guest_tool'), undefined);
    assert.ok(!(await toolNames(home.secret('caller'))).includes('guest_tool'));
  });

  it('refuses a name a device tool or another provider holds (409 naming the holder); the same flow reconnecting takes its own back', async () => {
    const device = await provide(home.secret('provider'), { source: 'flow:d', tools: [{ ...ANNOUNCE, name: 'living_room_lamp' }] });
    assert.equal(device.status, 409);
    assert.match(device.json.error.message, /a device tool is already named living_room_lamp/);
    assert.equal(home.hearth.tools.get('living_room_lamp')!.meta.entityIds[0], 'living_room_lamp.lamp');

    const first = await provide(home.secret('provider'), { source: 'flow:t5', tools: [ANNOUNCE] });
    await first.next('ready');
    const taken = await provide(home.secret('otherOwner'), { source: 'flow:t5', tools: [ANNOUNCE] });
    assert.equal(taken.status, 409);
    assert.equal(taken.json.error.field, 'tools[0].name');
    assert.match(taken.json.error.message, /announce is already provided by flow:t5 of http:node-red/);
    const sameTokenOtherNode = await provide(home.secret('provider'), { source: 'flow:t6', tools: [ANNOUNCE] });
    assert.equal(sameTokenOtherNode.status, 409);
    // The same node of the same token (a reconnect before the old stream was seen gone) replaces it; the old stream ends.
    const again = await provide(home.secret('provider'), { source: 'flow:t5', tools: [ANNOUNCE] });
    await again.next('ready');
    await first.ended;
    assert.ok(home.hearth.tools.get('announce'));
    const calling = api('POST', '/api/tools/announce/call', home.secret('caller'), { args: { text: 'who answers?' } });
    const call = await again.next('call');
    await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), { text: 'the new stream' });
    assert.equal((await calling).json.text, 'the new stream');
    again.drop();
  });

  it("a device announced later under a flow tool's name is named around it; a name an absent entity keeps is refused", async () => {
    const provider = await provide(home.secret('provider'), { source: 'flow:t9', tools: [{ ...ANNOUNCE, name: 'chime' }] });
    assert.equal(provider.status, 200, JSON.stringify(provider.json));
    await provider.next('ready');
    const topic = 'homeassistant/switch/fake_chime/config';
    const pub = await mqtt.connectAsync(home.broker.url, { protocolVersion: 4 });
    try {
      await pub.publishAsync(topic, JSON.stringify({ name: 'Chime', unique_id: 'fake_chime', command_topic: 'fake/chime/set' }), {
        qos: 1,
        retain: true,
      });
      const deviceTool = await waitFor('the discovered switch has a tool', () =>
        home.hearth.tools.all().find((t) => t.meta.entityIds.length === 1 && t.meta.entityIds[0].startsWith('chime.')),
      );
      assert.match(deviceTool.name, /^chime_[0-9a-f]+$/, 'the newcomer is suffixed');
      // chime still reaches the flow, not the device's command topic.
      const calling = api('POST', '/api/tools/chime/call', home.secret('caller'), { args: { text: 'still mine' } });
      const call = await provider.next('call');
      await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), { text: 'spoken' });
      assert.equal((await calling).json.text, 'spoken');
      assert.ok(!home.seen.some((m) => m.topic === 'fake/chime/set'), 'nothing was sent to the device');

      // The device goes away; its name stays its own: a flow may not take it meanwhile.
      await pub.publishAsync(topic, '', { qos: 1, retain: true });
      await waitFor('the switch is gone', () => !home.hearth.tools.get(deviceTool.name));
      const grab = await provide(home.secret('provider'), { source: 'flow:t10', tools: [{ ...ANNOUNCE, name: deviceTool.name }] });
      assert.equal(grab.status, 409, JSON.stringify(grab.json));
      assert.match(grab.json.error.message, new RegExp(`a device tool is already named ${deviceTool.name}`));
    } finally {
      await pub.publishAsync(topic, '', { qos: 1, retain: true });
      await pub.endAsync(true);
      provider.drop();
    }
  });

  it('a principal that loses the owner role loses its tools at the next call, which fails without reaching the flow', async () => {
    const lapsedToken = home.hearth.tokens.create('lapsed-red', 'http:lapsed-red').secret;
    home.hearth.policy.setRoles('http:lapsed-red', ['owner']);
    const provider = await provide(lapsedToken, { source: 'flow:t11', tools: [{ ...ANNOUNCE, name: 'doorbell' }] });
    assert.equal(provider.status, 200, JSON.stringify(provider.json));
    await provider.next('ready');
    home.hearth.policy.setRoles('http:lapsed-red', ['guest']);
    const r = await api('POST', '/api/tools/doorbell/call', home.secret('caller'), { args: { text: 'who is there?' } });
    assert.match(r.json.text, /http:lapsed-red, which provides tool doorbell, may no longer provide tools; nothing was run/);
    assert.ok(!provider.events.some((e) => e.event === 'call'), 'the flow never got the call');
    await provider.ended;
    assert.ok(!(await toolNames(home.secret('caller'))).includes('doorbell'));
    const row = home.hearth.audit.get(r.json.details.auditId)!;
    assert.equal(row.outcome, 'failed');
  });

  it('refuses bad definitions and answers, naming the tool and field', async () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ source: 'flow:x' }, 'tools', /non-empty list/],
      [{ source: 'flow:x', tools: [ANNOUNCE], extra: 1 }, 'extra', /unknown field/],
      [{ tools: [ANNOUNCE] }, 'source', /required/],
      [{ source: 'flow x', tools: [ANNOUNCE] }, 'source', /not valid/],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, name: 'bad name' }] }, 'tools[0].name', /tool name "bad name"/],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, description: '' }] }, 'tools[0].description', /description is required/],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, capability: 'root' }] }, 'tools[0].capability', /read or actuator/],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, timeoutMs: -1 }] }, 'tools[0].timeoutMs', /milliseconds/],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, parameters: { type: 'string' } }] }, 'tools[0].parameters', /type object/],
      [
        { source: 'flow:x', tools: [{ ...ANNOUNCE, parameters: { type: 'object', properties: { a: { type: 'nope' } } } }] },
        'tools[0].parameters',
        /not a valid JSON Schema/,
      ],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, color: 'red' }] }, 'tools[0].color', /unknown field/],
      [{ source: 'flow:x', tools: [ANNOUNCE, ANNOUNCE] }, 'tools[1].name', /declared twice/],
      [{ source: 'flow:x', tools: [{ ...ANNOUNCE, description: 'x'.repeat(20_000) }] }, 'tools[0]', /more than 16384/],
      [{ source: 'flow:x', tools: Array.from({ length: 33 }, (_, i) => ({ ...ANNOUNCE, name: `t${i}` })) }, 'tools', /at most 32 tools/],
    ];
    let deep: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { a: deep } };
    cases.push([{ source: 'flow:x', tools: [{ ...ANNOUNCE, parameters: deep }] }, 'tools[0].parameters', /nested more than 16 levels/]);
    for (const [body, field, message] of cases) {
      const r = await provide(home.secret('provider'), body);
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.error.field, field, JSON.stringify(r.json));
      assert.match(r.json.error.message, message);
    }
    assert.match((await provide(home.secret('provider'), cases[4][0])).json.error.message, /^tools\[0\] \(bad name\)\.name: /);
    assert.deepEqual((await api('GET', '/api/flow-tools', home.secret('provider'))).json, [], 'nothing was registered');

    const provider = await provide(home.secret('provider'), { source: 'flow:t7', tools: [ANNOUNCE] });
    await provider.next('ready');
    const calling = api('POST', '/api/tools/announce/call', home.secret('caller'), { args: { text: 'bad answers' } });
    const call = await provider.next('call');
    let nested: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) nested = { a: nested };
    const answers: Array<[unknown, string]> = [
      [{ text: 5 }, 'text'],
      [{ isError: 'yes' }, 'isError'],
      [{ details: [1] }, 'details'],
      [{ details: nested }, 'details'],
      [{ text: 'x'.repeat(70_000) }, 'text'],
      [{ text: 'ok', result: 1 }, 'result'],
    ];
    for (const [body, field] of answers) {
      const r = await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.field, field, r.text);
    }
    // Still waiting after the bad answers: a good one settles it.
    await api('POST', `/api/flow-tools/calls/${call.id}/result`, home.secret('provider'), { text: 'failed: no speaker', isError: true });
    const r = await calling;
    assert.equal(r.json.isError, true);
    assert.equal(home.hearth.audit.get(r.json.details.auditId)!.outcome, 'failed');
    provider.drop();
  });
});
