// The Wyoming conversation service on the demo home (aedes, simulator,
// SQLite), driven over real TCP by the real `wyoming` Python package (its
// AsyncTcpClient and event classes, as Home Assistant uses them: see
// python-wyoming.ts). Where the vendored package is absent the suites skip and
// say why.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { hearthVersion } from '../../src/util/version.js';
import { checkSatellites, WyomingServer } from '../../src/wyoming/server.js';
import { textChunks, toolCallChunks, type ScriptedResponse } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';
import { useModel, agentOnModel } from '../helpers/use-model.js';
import { useWyoming } from './helpers.js';
import { pythonWyomingMissing, type PythonWyomingClient } from './python-wyoming.js';

const missing = pythonWyomingMissing();
const HALLWAY_SECRET = 'hallway-secret-0123456789';
const SATELLITES = [
  // Both at the test's address: the kitchen is the address's own; the hallway speaks only with its secret.
  { name: 'kitchen', address: '127.0.0.1', area: 'Kitchen' },
  { name: 'hallway', address: '127.0.0.1', area: 'Hallway', secret: HALLWAY_SECRET },
];

describe('Wyoming service (Python wyoming client, offline model, demo home)', { skip: missing }, () => {
  const home = useHome();
  before(() => {
    home.hearth.policy.setRoles('voice:kitchen', ['owner']);
    home.hearth.policy.setRoles('voice:hallway', ['owner']);
  });
  const { py, wy } = useWyoming(home, SATELLITES);
  const client = (server: WyomingServer = wy): Promise<PythonWyomingClient> => py.connect(server.port);
  const lamp = () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value;

  it("describe: the library reads a handle program that may control the home, with Hearth's version", async () => {
    const c = await client();
    await c.describe();
    const info = await c.event();
    assert.equal(info.type, 'info');
    const [handle] = info.data.handle;
    assert.equal(handle.name, 'hearth');
    assert.equal(handle.installed, true);
    assert.equal(handle.supports_home_control, true);
    assert.equal(handle.supports_handled_streaming, false);
    assert.equal(handle.version, hearthVersion());
    assert.equal(handle.models[0].version, hearthVersion());
    assert.deepEqual(handle.models[0].languages, ['en']);
    assert.equal(typeof handle.attribution.name, 'string');
  });

  it('a transcript switches the lamp and is answered handled; the audit row has the satellite principal and area', async () => {
    const want = lamp() === 'on' ? 'off' : 'on';
    const c = await client();
    await c.transcript(`turn ${want} the living room lamp`, { conversation_id: 'ha-conv-1' });
    const handled = await c.event();
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
    await c.transcript('is the living room lamp on?');
    const handled = await c.event();
    assert.equal(handled.type, 'handled');
    assert.match(String(handled.data.text), /lamp/i);
    assert.equal(home.commands().length, before);
    assert.equal(home.hearth.audit.digest().count, audits);
  });

  it('an unlock is held, and the spoken answer is one sentence: who must approve, no id, rule or command line', async () => {
    const c = await client();
    await c.transcript('unlock the front door');
    const answer = await c.event();
    assert.equal(answer.type, 'handled');
    assert.equal(answer.data.text, "Unlocking the front door lock needs an owner's approval; I've asked.");
    const pending = home.hearth.approvals.list({ status: 'pending' }).find((a) => a.principal === 'voice:kitchen');
    assert.ok(pending, 'the approval waits, for the page and `hearth approvals`');
    assert.equal(home.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
  });

  it('a camera read is described in words: a satellite has no screen', async () => {
    const c = await client();
    await c.transcript('show me the front door camera');
    const answer = await c.event();
    assert.equal(answer.type, 'handled', JSON.stringify(answer));
    const text = String(answer.data.text);
    assert.doesNotMatch(text, /here is/i);
    assert.match(text, /latest picture from the front door camera is from .+; I can only show it on a screen/);
  });

  it('a sentence the agent does not understand is not-handled, so Home Assistant can ask another agent', async () => {
    const c = await client();
    await c.transcript('what is the weather like on mars', { conversation_id: 'ha-conv-2' });
    const answer = await c.event();
    assert.equal(answer.type, 'not-handled', JSON.stringify(answer));
    assert.match(String(answer.data.text), /did not understand/);
    assert.deepEqual(answer.data.context, { conversation_id: 'ha-conv-2' });
  });

  it('at a shared address a client speaks as its satellite only with its secret: naming another satellite chooses nothing', async () => {
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
    // Words alone: the address's own satellite (the kitchen) speaks, and may not open the garage.
    const named = await client();
    await named.transcript('open the garage door', { satellite: 'hallway' });
    const refused = await named.event();
    assert.equal(refused.type, 'handled');
    assert.match(String(refused.data.text), /not allowed/i);
    assert.equal(home.commands().length, before, 'nothing sent');
    const row = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(row.principal, 'voice:kitchen');
    assert.match(row.reason, /\[from area "Kitchen"\]/);

    // A wrong secret: refused before any turn.
    const liar = await client();
    await liar.transcript('open the garage door', { satellite: 'hallway', satellite_secret: 'not-the-secret-at-all' });
    const wrong = await liar.event();
    assert.equal(wrong.type, 'not-handled');
    assert.match(String(wrong.data.text), /could not prove who it is/);
    assert.equal(home.commands().length, before);

    // The secret proves it: the hallway's area, and the garage opens.
    const hallway = await client();
    await hallway.transcript('open the garage door', { satellite: 'hallway', satellite_secret: HALLWAY_SECRET });
    const done = await hallway.event();
    assert.equal(done.type, 'handled', JSON.stringify(done));
    await waitFor('the garage door is open', () => home.hearth.bridge.cache.get('garage_door.door')?.value === 'open', 10_000);
    const opened = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(opened.principal, 'voice:hallway');
    assert.equal(opened.decision, 'allow');
    assert.match(opened.reason, /\[from area "Hallway"\]/);
  });

  it('an empty transcript and an unknown satellite are answered not-handled, with the reason', async () => {
    const c = await client();
    await c.transcript('   ');
    const empty = await c.event();
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
      await stranger.transcript('turn on the living room lamp');
      const refused = await stranger.event();
      assert.equal(refused.type, 'not-handled');
      assert.match(String(refused.data.text), /not one of Hearth's satellites/);
      assert.equal(home.commands().length, before);
      assert.ok(home.logs.find(/no configured satellite/).length >= 1);
    } finally {
      await strict.close();
    }
  });

  it('bad frames close that connection with a log line; the service goes on', async () => {
    const cases: Array<[string, string]> = [
      ['oversized header', 'x'.repeat(70 * 1024)],
      ['bad JSON', '{"type": transcript}\n'],
      ['data length over the cap', '{"type":"transcript","data_length":99999999}\n'],
      ['data that is no object', '{"type":"transcript","data_length":2}\n[]'],
    ];
    for (const [what, bytes] of cases) {
      const logged = home.logs.find(/bad frame/).length;
      const c = await client();
      await c.raw(bytes);
      assert.equal(await c.read(), 'closed', `${what}: the connection is closed`);
      await waitFor(`a log line for ${what}`, () => home.logs.find(/bad frame/).length > logged);
    }
    const line = home.logs.find(/bad frame/).at(-1)!;
    assert.equal(line.level, 40);
    assert.ok((line.err as { message?: string })?.message, 'the error is logged as an object');
    const fine = await client();
    await fine.describe();
    assert.equal((await fine.event()).type, 'info');
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
      await c.describe();
      assert.equal((await c.event()).data.handle[0].supports_handled_streaming, true);
      const want = lamp() === 'on' ? 'off' : 'on';
      await c.transcript(`turn ${want} the living room lamp`, { conversation_id: 'stream-1' });
      const events = [await c.event()];
      while (!['handled-stop', 'not-handled'].includes(events.at(-1)!.type)) events.push(await c.event());
      assert.equal(events[0].type, 'handled-start', events.map((e) => e.type).join(','));
      assert.deepEqual(events[0].data.context, { conversation_id: 'stream-1' });
      const chunks = events.filter((e) => e.type === 'handled-chunk');
      assert.ok(chunks.length >= 1);
      assert.match(chunks.map((e) => e.data.text).join(''), /lamp/i);
      await waitFor(`the lamp is ${want}`, () => lamp() === want);

      // Not understood: not-handled even when streaming (nothing was said yet).
      await c.transcript('what is the weather like on mars');
      assert.equal((await c.event()).type, 'not-handled');
    } finally {
      await streaming.close();
    }
  });
});

describe('Wyoming service with an LLM (Python wyoming client, fake OpenAI server on the wire)', { skip: missing }, () => {
  const model = useModel();
  const home = useHome({ settings: () => agentOnModel(model.url) });
  before(() => home.hearth.policy.setRoles('voice:kitchen', ['owner']));
  const { py, wy } = useWyoming(home, [SATELLITES[0]]);

  it('"turn on the lights in here": the model is told the satellite\'s area; its call lands in the audit with it', async () => {
    const want = home.hearth.bridge.cache.get('kitchen_light.light')?.value === 'on' ? 'off' : 'on';
    model.setScript([toolCallChunks([{ name: 'host__kitchen_light', arguments: { action: `turn_${want}` } }]), textChunks(`The kitchen light is ${want}.`)]);
    const c = await py.connect(wy.port);
    await c.transcript(`turn ${want} the lights in here`);
    const handled = await c.event();
    assert.equal(handled.type, 'handled', JSON.stringify(handled));
    assert.equal(handled.data.text, `The kitchen light is ${want}.`);
    assert.match(model.requests[0].body.messages[0].content, /speaking from the area "Kitchen"/);
    await waitFor(`the kitchen light is ${want}`, () => home.hearth.bridge.cache.get('kitchen_light.light')?.value === want);
    const row = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(row.principal, 'voice:kitchen');
    assert.match(row.reason, /\[from area "Kitchen"\]/);
  });

  it("a second transcript while the conversation's turn runs is refused, and the first gets its real outcome", async () => {
    const want = home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on' ? 'off' : 'on';
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = model.requests.length;
    model.setScript(async (_body, index): Promise<ScriptedResponse> => {
      if (index === first) {
        await gate;
        return toolCallChunks([{ name: 'host__living_room_lamp', arguments: { action: `turn_${want}` } }]);
      }
      return textChunks(`The living room lamp is ${want}.`);
    });
    const asking = await py.connect(wy.port);
    await asking.transcript(`turn ${want} the living room lamp`, { conversation_id: 'busy-1' });
    await model.waitForRequests(first + 1);

    const again = await py.connect(wy.port);
    await again.transcript('and the kitchen light', { conversation_id: 'busy-1' });
    const busy = await again.event();
    assert.equal(busy.type, 'not-handled');
    assert.match(String(busy.data.text), /still working on your last request/);

    release();
    const answer = await asking.event();
    assert.equal(answer.type, 'handled', JSON.stringify(answer));
    assert.equal(answer.data.text, `The living room lamp is ${want}.`);
    await waitFor(`the lamp is ${want}`, () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === want);
    const row = home.hearth.audit.list({ limit: 1, order: 'desc' })[0];
    assert.equal(row.tool, 'living_room_lamp');
    assert.equal(row.outcome, 'confirmed');
  });

  it('a turn that fails (the model server errors) is answered not-handled with the reason, never left waiting', async () => {
    model.setScript([{ status: 500, body: { error: { message: 'the model crashed' } } }]);
    const c = await py.connect(wy.port);
    await c.transcript('turn on the kitchen light');
    const answer = await c.event();
    assert.equal(answer.type, 'not-handled');
    assert.match(String(answer.data.text), /^Sorry, I could not do that: /);
    // The connection stays usable.
    await c.describe();
    assert.equal((await c.event()).type, 'info');
  });
});

describe('Wyoming satellites in the config', () => {
  it('are checked at start-up, naming the field', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'hearth-wyoming-config-'));
    assert.throws(
      () => loadConfig({ cwd, env: {}, flags: { 'wyoming.satellites': '[{"name":"bad name","address":"1.2.3.4"}]' } }),
      (err: unknown) => err instanceof ConfigError && /wyoming\.satellites/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ cwd, env: {}, flags: { 'wyoming.satellites': '[{"name":"kitchen"}]' } }),
      (err: unknown) => err instanceof ConfigError && /address/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ cwd, env: {}, flags: { 'wyoming.satellites': '[{"name":"kitchen","address":"1.2.3.4","secret":"short"}]' } }),
      (err: unknown) => err instanceof ConfigError && /secret/.test(err.message),
    );
    assert.throws(
      () =>
        checkSatellites([
          { name: 'a', address: '1.2.3.4' },
          { name: 'A', address: '1.2.3.5' },
        ]),
      (err: unknown) => err instanceof ConfigError && /wyoming\.satellites\[1\]\.name/.test(err.message),
    );
    // Two at one address that a client could not tell apart.
    assert.throws(
      () =>
        checkSatellites([
          { name: 'kitchen', address: '10.0.0.5' },
          { name: 'garage', address: '10.0.0.5', area: 'Garage' },
        ]),
      (err: unknown) => err instanceof ConfigError && /wyoming\.satellites\[1\]\.secret/.test(err.message) && /10\.0\.0\.5/.test(err.message),
    );
    checkSatellites(SATELLITES);
    const { config } = loadConfig({ cwd, env: {}, flags: { 'wyoming.port': '10700', 'wyoming.satellites': JSON.stringify(SATELLITES) } });
    assert.equal(config.wyoming.port, 10700);
    assert.equal(config.wyoming.host, '127.0.0.1');
    assert.equal(config.wyoming.streaming, false);
    assert.deepEqual(config.wyoming.satellites, SATELLITES);
  });
});
