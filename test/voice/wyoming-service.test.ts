// The Wyoming conversation service on the demo home (aedes, simulator,
// SQLite), driven over real TCP by a Wyoming client written in this test from
// the public spec (./wyoming-client.ts).
//
// NOTE: the issue asks for the `wyoming` Python package's client; PyPI is not
// reachable from this machine and there is no npm package of it, so the
// third-party client could not be installed here. See wyoming-client.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { checkSatellites, WyomingServer } from '../../src/wyoming/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { startOpenAIServer, textChunks, toolCallChunks, type OpenAIServer } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { WyomingTestClient } from './wyoming-client.js';

const SATELLITES = [
  // Both at the test's address: the client names the one it speaks for (context.satellite); the first is the default.
  { name: 'kitchen', address: '127.0.0.1', area: 'Kitchen' },
  { name: 'hallway', address: '127.0.0.1', area: 'Hallway' },
];

describe('Wyoming service (offline model, demo home)', () => {
  let broker: TestBroker;
  let home: TestHome;
  let wy: WyomingServer;
  const clients: WyomingTestClient[] = [];
  const client = async (server = wy) => {
    const c = await WyomingTestClient.connect(server.port);
    clients.push(c);
    return c;
  };
  const lamp = () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
    home.hearth.policy.setRoles('voice:kitchen', ['owner']);
    home.hearth.policy.setRoles('voice:hallway', ['owner']);
    wy = await WyomingServer.start({ hearth: home.hearth, port: 0, satellites: SATELLITES, log: home.logs.log.child({ part: 'wyoming' }) });
  });
  after(async () => {
    for (const c of clients) c.close();
    await wy?.close();
    await home?.close();
    await broker?.stop();
  });

  it('describe answers info with a handle program', async () => {
    const c = await client();
    c.send('describe');
    const info = await c.next('info');
    assert.equal(info.data.handle instanceof Array, true);
    const [handle] = info.data.handle as any[];
    assert.equal(handle.name, 'hearth');
    assert.equal(handle.installed, true);
    assert.equal(handle.supports_handled_streaming, false);
    assert.deepEqual(handle.models[0].languages, ['en']);
    assert.equal(typeof handle.attribution.name, 'string');
  });

  it('a transcript switches the lamp and is answered handled; the audit row has the satellite principal and area', async () => {
    const want = lamp() === 'on' ? 'off' : 'on';
    const c = await client();
    c.send('transcript', { text: `turn ${want} the living room lamp`, context: { conversation_id: 'ha-conv-1' } });
    const handled = await c.next();
    assert.equal(handled.type, 'handled', JSON.stringify(handled));
    assert.match(String(handled.data.text), /lamp/i);
    assert.deepEqual(handled.data.context, { conversation_id: 'ha-conv-1' });
    await waitFor(`the lamp is ${want}`, () => lamp() === want);
    const row = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(row.principal, 'voice:kitchen');
    assert.equal(row.tool, 'living_room_lamp');
    assert.match(row.reason, /\[from area "Kitchen"\]/);
  });

  it('a question is answered and does not actuate', async () => {
    const before = home.commands().length;
    const audits = home.hearth.audit.digest().count;
    const c = await client();
    c.send('transcript', { text: 'is the living room lamp on?' });
    const handled = await c.next();
    assert.equal(handled.type, 'handled');
    assert.match(String(handled.data.text), /lamp/i);
    assert.equal(home.commands().length, before);
    assert.equal(home.hearth.audit.digest().count, audits);
  });

  it('an unlock is held, and the spoken answer says an owner must approve and how', async () => {
    const c = await client();
    c.send('transcript', { text: 'unlock the front door' });
    const answer = await c.next();
    assert.equal(answer.type, 'handled');
    const text = String(answer.data.text);
    assert.match(text, /owner role must grant approval [0-9a-f]+/);
    assert.match(text, /hearth approve/);
    assert.doesNotMatch(text, /`/, 'no markdown in a spoken answer');
    const pending = home.hearth.approvals.list({ status: 'pending' }).find((a) => a.principal === 'voice:kitchen');
    assert.ok(pending);
    assert.ok(text.includes(pending.id));
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });

  it('a --from-area rule: the garage opens from the hallway satellite, not from the kitchen one', async () => {
    home.hearth.policy.add({
      subject: 'voice:*',
      targetType: 'device_class',
      target: 'garage',
      action: 'open',
      effect: 'deny',
      priority: 90,
      note: 'test: voice may not open the garage',
    });
    home.hearth.policy.add({
      subject: 'voice:*',
      targetType: 'device_class',
      target: 'garage',
      action: 'open',
      effect: 'allow',
      priority: 101,
      fromArea: 'Hallway',
      note: 'test: but the hallway satellite may',
    });
    const before = home.commands().length;
    const kitchen = await client();
    kitchen.send('transcript', { text: 'open the garage door', context: { satellite: 'kitchen' } });
    const refused = await kitchen.next();
    assert.equal(refused.type, 'handled');
    assert.match(String(refused.data.text), /not allowed/i);
    assert.equal(home.commands().length, before, 'nothing sent from the kitchen');
    assert.equal(home.hearth.audit.list({ limit: 1, order: 'desc' })[0].principal, 'voice:kitchen');

    const hallway = await client();
    hallway.send('transcript', { text: 'open the garage door', context: { satellite: 'hallway' } });
    const done = await hallway.next();
    assert.equal(done.type, 'handled', JSON.stringify(done));
    await waitFor('the garage door is open', () => home.hearth.bridge.cache.get('garage_door.door')?.value === 'open', 10_000);
    const row = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(row.principal, 'voice:hallway');
    assert.equal(row.decision, 'allow');
    assert.match(row.reason, /\[from area "Hallway"\]/);
  });

  it('an empty transcript and an unknown satellite are answered not-handled, with the reason', async () => {
    const c = await client();
    c.send('transcript', { text: '   ' });
    const empty = await c.next();
    assert.equal(empty.type, 'not-handled');
    assert.match(String(empty.data.text), /did not hear anything/);

    // A service whose only satellite is elsewhere: this address is nobody's.
    const strict = await WyomingServer.start({
      hearth: home.hearth,
      port: 0,
      satellites: [{ name: 'garden', address: '10.9.9.9', area: 'Garden' }],
      log: home.logs.log.child({ part: 'wyoming' }),
    });
    try {
      const before = home.commands().length;
      const stranger = await client(strict);
      stranger.send('transcript', { text: 'turn on the living room lamp' });
      const refused = await stranger.next();
      assert.equal(refused.type, 'not-handled');
      assert.match(String(refused.data.text), /not one of Hearth's satellites/);
      assert.equal(home.commands().length, before);
      assert.ok(home.logs.find(/no configured satellite/).length >= 1);
    } finally {
      await strict.close();
    }
  });

  it('bad frames close that connection with a log line; the service goes on', async () => {
    const cases: Array<[string, string | Buffer]> = [
      ['oversized header', 'x'.repeat(70 * 1024)],
      ['bad JSON', '{"type": transcript}\n'],
      ['data length over the cap', '{"type":"transcript","data_length":99999999}\n'],
    ];
    for (const [what, bytes] of cases) {
      const logged = home.logs.find(/bad frame/).length;
      const c = await client();
      c.writeRaw(bytes);
      await c.waitClosed();
      await waitFor(`a log line for ${what}`, () => home.logs.find(/bad frame/).length > logged);
    }
    const line = home.logs.find(/bad frame/).at(-1)!;
    assert.equal(line.level, 40);
    assert.ok((line.err as { message?: string })?.message, 'the error is logged as an object');
    const fine = await client();
    fine.send('describe');
    assert.equal((await fine.next()).type, 'info');
  });

  it('an idle connection is closed, giving its slot back', async () => {
    const quick = await WyomingServer.start({
      hearth: home.hearth,
      port: 0,
      satellites: SATELLITES,
      idleMs: 300,
      log: home.logs.log.child({ part: 'wyoming' }),
    });
    try {
      const c = await client(quick);
      c.send('describe');
      assert.equal((await c.next()).type, 'info');
      await c.waitClosed();
    } finally {
      await quick.close();
    }
  });

  it('with streaming on: info says so, and the answer comes as handled-start, chunks, handled-stop', async () => {
    const streaming = await WyomingServer.start({
      hearth: home.hearth,
      port: 0,
      satellites: SATELLITES,
      streaming: true,
      log: home.logs.log.child({ part: 'wyoming' }),
    });
    try {
      const c = await client(streaming);
      c.send('describe');
      assert.equal(((await c.next('info')).data.handle as any[])[0].supports_handled_streaming, true);
      const want = lamp() === 'on' ? 'off' : 'on';
      c.send('transcript', { text: `turn ${want} the living room lamp`, context: { conversation_id: 'stream-1' } });
      const events = await c.until(['handled-stop', 'not-handled']);
      assert.equal(events[0].type, 'handled-start', events.map((e) => e.type).join(','));
      assert.deepEqual(events[0].data.context, { conversation_id: 'stream-1' });
      assert.equal(events.at(-1)!.type, 'handled-stop');
      const chunks = events.filter((e) => e.type === 'handled-chunk');
      assert.ok(chunks.length >= 1);
      assert.match(chunks.map((e) => e.data.text).join(''), /lamp/i);
      await waitFor(`the lamp is ${want}`, () => lamp() === want);
    } finally {
      await streaming.close();
    }
  });

  it('config: satellites are checked at start-up, naming the field', () => {
    assert.throws(
      () => loadConfig({ cwd: home.dir, env: {}, flags: { 'wyoming.satellites': '[{"name":"bad name","address":"1.2.3.4"}]' } }),
      (err: unknown) => err instanceof ConfigError && /wyoming\.satellites/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ cwd: home.dir, env: {}, flags: { 'wyoming.satellites': '[{"name":"kitchen"}]' } }),
      (err: unknown) => err instanceof ConfigError && /address/.test(err.message),
    );
    assert.throws(
      () =>
        checkSatellites([
          { name: 'a', address: '1.2.3.4' },
          { name: 'A', address: '1.2.3.5' },
        ]),
      (err: unknown) => err instanceof ConfigError && /wyoming\.satellites\[1\]\.name/.test(err.message),
    );
    const { config } = loadConfig({ cwd: home.dir, env: {}, flags: { 'wyoming.port': '10700', 'wyoming.satellites': JSON.stringify(SATELLITES) } });
    assert.equal(config.wyoming.port, 10700);
    assert.equal(config.wyoming.host, '127.0.0.1');
    assert.equal(config.wyoming.streaming, false);
    assert.deepEqual(config.wyoming.satellites, SATELLITES);
    assert.equal(loadConfig({ cwd: home.dir, env: {} }).config.wyoming.port, undefined, 'off by default');
  });
});

describe('Wyoming service with an LLM (fake OpenAI server on the wire)', () => {
  let broker: TestBroker;
  let home: TestHome;
  let model: OpenAIServer;
  let wy: WyomingServer;
  const clients: WyomingTestClient[] = [];

  before(async () => {
    broker = await startAedes();
    model = await startOpenAIServer();
    home = await startHome(broker, { extraSettings: { 'agent.provider': 'openai', 'agent.baseUrl': model.url, 'agent.model': 'test-model' } });
    home.hearth.policy.setRoles('voice:kitchen', ['owner']);
    wy = await WyomingServer.start({ hearth: home.hearth, port: 0, satellites: [SATELLITES[0]], log: home.logs.log.child({ part: 'wyoming' }) });
  });
  after(async () => {
    for (const c of clients) c.close();
    await wy?.close();
    await home?.close();
    await model?.close();
    await broker?.stop();
  });

  it('"turn on the lights in here": the model is told the satellite\'s area; its call lands in the audit with it', async () => {
    const want = home.hearth.bridge.cache.get('kitchen_light.light')?.value === 'on' ? 'off' : 'on';
    model.setScript([toolCallChunks([{ name: 'host__kitchen_light', arguments: { action: `turn_${want}` } }]), textChunks(`The kitchen light is ${want}.`)]);
    const c = await WyomingTestClient.connect(wy.port);
    clients.push(c);
    c.send('transcript', { text: `turn ${want} the lights in here` });
    const handled = await c.next();
    assert.equal(handled.type, 'handled', JSON.stringify(handled));
    assert.equal(handled.data.text, `The kitchen light is ${want}.`);
    assert.match(model.requests[0].body.messages[0].content, /speaking from the area "Kitchen"/);
    await waitFor(`the kitchen light is ${want}`, () => home.hearth.bridge.cache.get('kitchen_light.light')?.value === want);
    const row = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(row.principal, 'voice:kitchen');
    assert.match(row.reason, /\[from area "Kitchen"\]/);
  });

  it('a turn that fails (the model server errors) is answered not-handled with the reason, never left waiting', async () => {
    model.setScript([{ status: 500, body: { error: { message: 'the model crashed' } } }]);
    const c = await WyomingTestClient.connect(wy.port);
    clients.push(c);
    c.send('transcript', { text: 'turn on the kitchen light' });
    const answer = await c.next();
    assert.equal(answer.type, 'not-handled');
    assert.match(String(answer.data.text), /^Sorry, I could not do that: /);
    // The connection stays usable.
    c.send('describe');
    assert.equal((await c.next()).type, 'info');
  });
});
