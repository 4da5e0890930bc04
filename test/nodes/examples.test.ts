// The example flows as a user runs them: `hearth start` (the demo home, its
// database, a token for Node-RED, a confirm rule made with the CLI); this
// package npm-installed into a Node-RED user directory; a real Node-RED 4.1
// with adminAuth on. Each example is deployed through the admin API (POST
// /flows, with an admin's token) and does what it says on real MQTT. The
// editor-only catalog endpoint refuses a caller without hearth.read. The
// editor, with each node's form open, is photographed into
// test/artifacts/node-red/. Every process is in its own group, stopped at the end.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mqtt, { type MqttClient } from 'mqtt';
import { freePort } from '../helpers/brokers.js';
import { ROOT, runHearth, spawnHearth, startHearthDaemon, type Spawned } from '../helpers/cli.js';
import { startOpenAIServer, textChunks, toolCallChunks, type OpenAIServer } from '../helpers/openai-server.js';
import { installIntoUserDir, type NodeRedRuntime, startNodeRed } from '../helpers/node-red-runtime.js';
import { waitFor } from '../helpers/wait.js';
import { CHROMIUM_ARGS, findChromium } from '../helpers/page-browser.js';

const require = createRequire(import.meta.url);
const bcrypt = require('bcryptjs') as { hashSync(pw: string, rounds: number): string };
const ARTIFACTS = join(ROOT, 'test', 'artifacts', 'node-red');

const dir = mkdtempSync(join(tmpdir(), 'hearth-nr-examples-'));
const userDir = join(dir, 'node-red');
const dbPath = join(dir, 'hearth.db');
let hearth: Spawned | undefined;
let red: NodeRedRuntime | undefined;
let watcher: MqttClient | undefined;
let model: OpenAIServer | undefined;
let brokerPort = 0;
let daemonUrl = '';
let daemonToken = '';
let adminToken = '';
let viewerToken = '';
const seen: Array<{ topic: string; payload: string }> = [];
const last = new Map<string, string>();

type Flow = Array<Record<string, any>>;

async function cli(args: string[], db = dbPath) {
  const r = await runHearth([...args, '--db', db], { cwd: dir });
  assert.equal(r.code, 0, `hearth ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function http(
  method: string,
  path: string,
  opts: { body?: unknown; token?: string | null; form?: Record<string, string>; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.token === undefined ? adminToken : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (opts.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(opts.form).toString();
  } else if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(`${red!.url}${path}`, { method, headers, body, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

function example(name: string): Flow {
  return JSON.parse(readFileSync(join(ROOT, 'examples', name), 'utf8')) as Flow;
}

/** Point an example at this test's daemon, broker and token. */
function localize(flow: Flow): Flow {
  for (const n of flow) {
    if (n.type === 'hearth-bridge') {
      if (n.mode === 'daemon') {
        n.daemonUrl = daemonUrl;
        n.credentials = { token: daemonToken };
      } else {
        n.broker = `mqtt://127.0.0.1:${brokerPort}`;
      }
    }
    if (n.type === 'mqtt-broker') n.port = String(brokerPort);
  }
  return flow;
}

async function deploy(flow: Flow): Promise<void> {
  const r = await http('POST', '/flows', { body: flow, headers: { 'Node-RED-Deployment-Type': 'full' } });
  assert.equal(r.status, 204, r.text);
}

/** Waits for a route the deployed flow serves (http-in routes exist once the flow has started). */
async function route(method: string, path: string, body?: unknown) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await http(method, path, { body, token: null });
    if (r.status !== 404 || Date.now() > deadline) return r;
    await new Promise((ok) => setTimeout(ok, 200));
  }
}

async function daemonApi(method: string, path: string, body?: unknown) {
  const res = await fetch(`${daemonUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${daemonToken}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function stateOf(entity: string): Promise<unknown> {
  const r = await daemonApi('GET', '/api/devices');
  return (r.json as Array<{ id: string; value: unknown }>).find((e) => e.id === entity)?.value;
}

/** The bridge's catalog once the bridge is deployed and connected (its event stream open). */
async function bridgeConnected(id: string) {
  const deadline = Date.now() + 90_000; // a hang guard: a deploy on a busy machine takes a while
  for (;;) {
    const r = await http('GET', `/hearth/bridges/${id}/catalog`);
    if (r.status === 200 && r.json.connected) return r;
    if (Date.now() > deadline) throw new Error(`bridge ${id} never connected: ${r.status} ${r.text}\n${red!.log().slice(-2000)}`);
    await new Promise((ok) => setTimeout(ok, 200));
  }
}

async function pendingApprovals(match: (a: any) => boolean): Promise<any[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const list = (JSON.parse(await cli(['approvals', '--json'])) as any[]).filter(match);
    if (list.length || Date.now() > deadline) return list;
    await new Promise((ok) => setTimeout(ok, 300));
  }
}

before(async () => {
  for (const f of ['nodes/hearth-state.js', 'nodes/lib/daemon.js', 'dist/http/api-tools.js'])
    assert.ok(existsSync(join(ROOT, f)), `${f} is missing: run npm run build first`);
  // The daemon's database: a token for Node-RED (an owner) and a rule that a re-lock by Node-RED asks a person first.
  daemonToken = JSON.parse(await cli(['token', 'create', 'node-red', '--principal', 'http:node-red', '--role', 'owner', '--json'])).secret;
  await cli(['policy', 'confirm', 'http:node-red', '--tool', 'front_door_lock', '--action', 'lock', '--note', 'test: a person approves the re-lock']);
  brokerPort = await freePort();
  ({ hearth, httpUrl: daemonUrl } = await startHearthDaemon(dbPath, brokerPort, dir));
  watcher = await mqtt.connectAsync(`mqtt://127.0.0.1:${brokerPort}`, { protocolVersion: 4, reconnectPeriod: 200 });
  watcher.on('message', (topic, payload) => {
    const text = payload.toString('utf8');
    seen.push({ topic, payload: text });
    last.set(topic, text);
  });
  await watcher.subscribeAsync(['hearth/#', 'hearth-demo/kitchen_light', 'hearth-demo/front_door/lock', 'hearth-demo/living_room_lamp/state'], { qos: 1 });
  model = await startOpenAIServer();

  installIntoUserDir(userDir);
  red = await startNodeRed({
    dir,
    userDir,
    credentialSecret: 'hearth-examples-test-secret',
    settings: `  adminAuth: {
    type: 'credentials',
    users: [
      { username: 'admin', password: ${JSON.stringify(bcrypt.hashSync('admin-pw-1234', 4))}, permissions: '*' },
      { username: 'viewer', password: ${JSON.stringify(bcrypt.hashSync('viewer-pw-1234', 4))}, permissions: ['flows.read'] },
    ],
  },
`,
  });
  const login = async (username: string, password: string, scope: string) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await http('POST', '/auth/token', {
        token: null,
        form: { client_id: 'node-red-admin', grant_type: 'password', scope, username, password },
      }).catch(() => undefined);
      if (r?.status === 200) return r.json.access_token as string;
      if (r && r.status !== 404 && r.status < 500) throw new Error(`no token for ${username}: ${r.status} ${r.text}`);
      if (Date.now() > deadline) throw new Error(`no token for ${username}: ${r?.status} ${r?.text}\n${red!.log()}`);
      await new Promise((ok) => setTimeout(ok, 200));
    }
  };
  adminToken = await login('admin', 'admin-pw-1234', '*');
  viewerToken = await login('viewer', 'viewer-pw-1234', 'flows.read');
});

after(async () => {
  await red?.stop();
  await watcher?.endAsync(true).catch(() => undefined);
  await model?.close();
  await hearth?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('example flows against the demo home, deployed through the admin API', () => {
  it('motion: the hall light goes on when motion is seen, off after the set time without motion; the pickers answer admins only', async () => {
    const flow = localize(example('motion-light.json'));
    // Two minutes is the example's; the test waits one second of no motion.
    flow.find((n) => n.id === 'hearth.motion.none')!.for = 1;
    await deploy(flow);

    // The editor's catalog: an admin gets the bridge's entities and tools; no token, or no hearth.read, is refused.
    const path = '/hearth/bridges/hearth.motion.bridge/catalog';
    const catalog = await bridgeConnected('hearth.motion.bridge');
    assert.ok(catalog.json.entities.some((e: { id: string }) => e.id === 'hallway_motion.occupancy'));
    // Each entity with its tool and actions, from the daemon's /api/controls (a sensor has none).
    const entity = (id: string) => catalog.json.entities.find((e: { id: string }) => e.id === id);
    assert.deepEqual([entity('robot_vacuum.vacuum').tool, entity('robot_vacuum.vacuum').actions?.includes('return_to_base')], ['robot_vacuum', true]);
    assert.equal(entity('hallway_motion.occupancy').actions, undefined);
    assert.ok(catalog.json.tools.some((t: { name: string; parameters: { type: string } }) => t.name === 'kitchen_light' && t.parameters.type === 'object'));
    assert.ok(catalog.json.areas.includes('Hallway'));
    assert.ok(catalog.json.principals.includes('http:node-red'));
    assert.ok(catalog.json.roles.includes('owner'), 'roles fields complete from the roles the policy knows');
    assert.equal((await http('GET', path, { token: null })).status, 401);
    assert.ok([401, 403].includes((await http('GET', path, { token: viewerToken })).status), 'a user without hearth.read is refused');
    assert.equal((await http('GET', '/hearth/bridges/nope/catalog')).status, 404);

    await daemonApi('POST', '/api/tools/kitchen_light/call', { args: { action: 'turn_off' } });
    assert.equal(await stateOf('kitchen_light.light'), 'off');
    // Motion on the broker (a PIR reports), again until the flow (which subscribes as it starts) answers.
    const lightOn = async () => (await stateOf('kitchen_light.light')) === 'on';
    const until = Date.now() + 60_000;
    while (!(await lightOn()) && Date.now() < until) {
      await watcher!.publishAsync('hearth-demo/hallway_motion', JSON.stringify({ occupancy: false }));
      await watcher!.publishAsync('hearth-demo/hallway_motion', JSON.stringify({ occupancy: true }));
      await new Promise((ok) => setTimeout(ok, 500));
    }
    assert.ok(await lightOn(), `the light went on with motion\n${red!.log().slice(-2000)}`);
    // Motion reports while the light is on command nothing: one audit row per change, not one per report.
    const turnOns = () => {
      const db = new Database(dbPath, { readonly: true });
      try {
        return (db.prepare("SELECT count(*) AS n FROM audit WHERE tool = 'kitchen_light' AND action = 'turn_on'").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    const rowsOnceOn = turnOns();
    for (let i = 0; i < 5; i++) {
      await watcher!.publishAsync('hearth-demo/hallway_motion', JSON.stringify({ occupancy: false }));
      await watcher!.publishAsync('hearth-demo/hallway_motion', JSON.stringify({ occupancy: true }));
    }
    await watcher!.publishAsync('hearth-demo/hallway_motion', JSON.stringify({ occupancy: false }));
    const offBy = Date.now() + 60_000;
    while ((await stateOf('kitchen_light.light')) !== 'off' && Date.now() < offBy) await new Promise((ok) => setTimeout(ok, 200));
    assert.equal(await stateOf('kitchen_light.light'), 'off', 'the light went off once no motion held');
    // The reports above reached the flow before the last one that turned the light off (one broker, one order).
    assert.equal(turnOns(), rowsOnceOn, 'the repeated motion reports did not command the light again');
  });

  it('late unlock: the front door unlocks "after 22:00": a notice on MQTT, and the re-lock waits for `hearth approve`', async () => {
    const flow = localize(example('late-door-unlock.json'));
    // Every minute of the day is late for this test.
    flow.find((n) => n.id === 'hearth.late.tab')!.env = [
      { name: 'LATE_FROM', value: '00:00', type: 'str' },
      { name: 'LATE_TO', value: '24:00', type: 'str' },
    ];
    await deploy(flow);
    assert.equal(await stateOf('front_door.lock'), 'locked');
    await bridgeConnected('hearth.late.bridge');
    // Someone unlocks the door (an owner over the daemon's API; the built-in confirm rule asks, the CLI approves).
    const held = await daemonApi('POST', '/api/tools/front_door_lock/call', { args: { action: 'unlock' } });
    assert.equal(held.status, 200);
    const unlockId = held.json.details.approvalId as string;
    assert.equal(typeof unlockId, 'string', JSON.stringify(held.json));
    await cli(['approve', unlockId]);
    const unlocked = await daemonApi('POST', '/api/tools/front_door_lock/call', { args: { action: 'unlock' } });
    assert.match(unlocked.json.text, /^confirmed/, JSON.stringify(unlocked.json));

    const notices = () => seen.filter((m) => m.topic === 'hearth/notify').map((m) => m.payload);
    await waitFor('the notice on hearth/notify', () => notices().some((n) => /Front door unlocked at/.test(n)), 20_000);
    const relock = await pendingApprovals((a) => a.principal === 'http:node-red' && a.tool === 'front_door_lock' && a.args.action === 'lock');
    assert.equal(relock.length, 1, 'the re-lock waits for a person');
    // The person is told what waits and how to approve it; nothing says the door is locked while it is not.
    await waitFor('the held re-lock announced', () => notices().some((n) => n.includes(`hearth approve ${relock[0].id}`)), 20_000);
    assert.equal(await stateOf('front_door.lock'), 'unlocked');
    assert.ok(!notices().some((n) => /locked again\./.test(n)), notices().join('\n'));
    await cli(['approve', relock[0].id]);
    const lockedBy = Date.now() + 60_000;
    while ((await stateOf('front_door.lock')) !== 'locked' && Date.now() < lockedBy) await new Promise((ok) => setTimeout(ok, 200));
    assert.equal(await stateOf('front_door.lock'), 'locked');
    await waitFor('the outcome announced', () => notices().includes('Front door locked again.'), 20_000);
  });

  it("chat: a text typed on the flow's page is answered by a session in the daemon; the lamp goes on, audited as the token's principal", async () => {
    const flow = localize(example('chat-dashboard.json'));
    assert.equal(flow.find((n) => n.type === 'hearth-bridge')!.mode, 'daemon', 'the example uses the running daemon');
    await deploy(flow);
    const page = await route('GET', '/hearth/dashboard');
    assert.equal(page.status, 200);
    assert.match(page.text, /<input id="text"/);
    const r = await route('POST', '/hearth/dashboard/say', { text: 'turn on the living room lamp', session: 'test' });
    assert.equal(r.status, 200, `${r.text}\n${red!.log().slice(-2000)}`);
    assert.match(r.json.answer, /lamp/i);
    await waitFor('the lamp reports ON', () => last.get('hearth-demo/living_room_lamp/state') === 'ON', 10_000);
    // The page as a person uses it, at the address the flow's comment gives (no trailing slash) and with one.
    const comment = flow.find((n) => n.id === 'hearth.dash.c1')!.name as string;
    const address = /\/hearth\/dashboard\b/.exec(comment)?.[0];
    assert.equal(address, '/hearth/dashboard');
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: findChromium(), args: CHROMIUM_ARGS });
    try {
      for (const [path, text] of [
        [address, 'is the living room lamp on?'],
        [`${address}/`, 'is the kitchen light on?'],
      ]) {
        const tab = await browser.newPage();
        await tab.goto(`${red!.url}${path}`);
        await tab.fill('#text', text);
        await tab.press('#text', 'Enter');
        const answer = await tab.waitForSelector('#log p:nth-child(2)', { timeout: 30_000 });
        assert.match((await answer.textContent()) ?? '', /^house: .*(lamp|light)/i, `${path}: ${await answer.textContent()}`);
        await tab.close();
      }
    } finally {
      await browser.close();
    }
    // One database: the session's call is in the daemon's audit log, as the bridge token's principal.
    const db = new Database(dbPath, { readonly: true });
    try {
      // The session as the daemon keeps it: the flow's name for it, in its principal's namespace.
      const rows = db.prepare("SELECT principal, tool, action FROM audit WHERE session = 'api-http:node-red/test'").all();
      assert.deepEqual(rows, [{ principal: 'http:node-red', tool: 'living_room_lamp', action: 'turn_on' }]);
    } finally {
      db.close();
    }
  });

  it("chat over HTTP: the session is the daemon's; an unlock waits for a decision over the flow's endpoints; both calls are in the daemon's audit", async () => {
    const flow = localize(example('hearth-chat.json'));
    assert.equal(flow.find((n) => n.type === 'hearth-bridge')!.mode, 'daemon', 'the example uses the running daemon');
    await deploy(flow);
    await bridgeConnected('hearth.bridge');
    const r = await route('POST', '/hearth/chat', { text: 'turn on the living room lamp', session: 'chat-example' });
    assert.equal(r.status, 200, `${r.text}\n${red!.log().slice(-2000)}`);
    assert.match(r.json.answer, /lamp/i);
    assert.deepEqual(
      r.json.result.toolCalls.map((c: { name: string }) => c.name),
      ['living_room_lamp'],
    );

    assert.equal(await stateOf('front_door.lock'), 'locked');
    const asked = route('POST', '/hearth/chat', { text: 'unlock the front door', session: 'chat-example' });
    let pending: any[] = [];
    await waitFor(
      "the unlock listed on the flow's endpoint",
      async () => {
        pending = (await http('GET', '/hearth/approvals', { token: null })).json ?? [];
        return pending.some((a) => a.tool === 'front_door_lock');
      },
      60_000,
    );
    const request = pending.find((a) => a.tool === 'front_door_lock');
    // A decision for no such request is the caller's error, and decides nothing.
    assert.equal((await http('POST', '/hearth/approvals/no-such-id', { token: null, body: { decision: 'allow_once' } })).status, 400);
    assert.equal(await stateOf('front_door.lock'), 'locked');
    const decided = await http('POST', `/hearth/approvals/${request.id}`, { token: null, body: { decision: 'allow_once' } });
    assert.equal(decided.status, 200, decided.text);
    const answered = await asked;
    assert.equal(answered.status, 200, answered.text);
    await waitFor('the door unlocked', async () => (await stateOf('front_door.lock')) === 'unlocked', 30_000);
    const db = new Database(dbPath, { readonly: true });
    try {
      const rows = db.prepare("SELECT principal, tool, action, outcome FROM audit WHERE session LIKE '%chat-example%' ORDER BY id").all();
      assert.deepEqual(rows, [
        { principal: 'http:node-red', tool: 'living_room_lamp', action: 'turn_on', outcome: 'confirmed' },
        { principal: 'http:node-red', tool: 'front_door_lock', action: 'unlock', outcome: 'confirmed' },
      ]);
    } finally {
      db.close();
    }
  });

  it("flow tool: the daemon's agent and `hearth call` reach `announce`; the flow speaks it on MQTT and answers; the daemon audits it", async () => {
    const flow = localize(example('flow-tool.json'));
    const bridge = flow.find((n) => n.type === 'hearth-bridge')!;
    assert.equal(bridge.mode, 'daemon', 'the example uses the running daemon');
    // The daemon's agent picks tools with a language model: a daemon of its own on the same broker, with the scripted model.
    const agentDb = join(dir, 'agent', 'hearth.db');
    mkdirSync(join(dir, 'agent'), { recursive: true });
    const agentToken = JSON.parse(await cli(['token', 'create', 'node-red', '--principal', 'http:node-red', '--role', 'owner', '--json'], agentDb)).secret;
    await cli(['policy', 'allow', 'role:owner', '--tool', 'announce', '--note', 'test: owners may announce'], agentDb);
    const agentDaemon = spawnHearth(
      [
        'start',
        '--mqtt-url',
        `mqtt://127.0.0.1:${brokerPort}`,
        '--db',
        agentDb,
        '--set',
        'http.port=0',
        '--set',
        'agent.provider=openai',
        '--set',
        `agent.baseUrl=${model!.url}`,
        '--set',
        'agent.model=test-model',
        '--log-level',
        'warn',
      ],
      { cwd: dir },
    );
    try {
      await agentDaemon.waitForOutput('Press Ctrl+C to stop.', 30_000);
      const agentUrl = /http\s+(http:\/\/\S+)/.exec(agentDaemon.stdout())![1].replace(/\/$/, '');
      Object.assign(bridge, { daemonUrl: agentUrl, credentials: { token: agentToken } });
      const toolsOfDaemon = async () => {
        const res = await fetch(`${agentUrl}/api/tools`, { headers: { authorization: `Bearer ${agentToken}` }, signal: AbortSignal.timeout(15_000) });
        return ((await res.json()) as Array<{ name: string }>).map((t) => t.name);
      };
      model!.setScript([toolCallChunks([{ id: 'c1', name: 'host__announce', arguments: { text: 'dinner is ready' } }]), textChunks('I announced it.')]);
      await deploy(flow);
      await waitFor('the daemon lists announce', async () => (await toolsOfDaemon()).includes('announce'), 60_000);
      const r = await route('POST', '/hearth/agent', { text: 'tell everyone dinner is ready' });
      assert.equal(r.status, 200, `${r.text}\n${red!.log().slice(-2000)}`);
      assert.equal(r.json.answer, 'I announced it.');
      assert.deepEqual([r.json.tools].flat(), ['announce']);
      await waitFor('spoken on hearth/announce', () => last.get('hearth/announce') === 'dinner is ready', 10_000);
      // The CLI reaches the same tool through the daemon, as the comment in the flow says.
      const called = JSON.parse(await cli(['call', 'announce', '{"text":"the door is open"}', '--json'], agentDb));
      assert.equal(called.text, 'announced: the door is open');
      await waitFor('spoken again', () => last.get('hearth/announce') === 'the door is open', 10_000);
      const db = new Database(agentDb, { readonly: true });
      try {
        const rows = db.prepare("SELECT principal, outcome FROM audit WHERE tool = 'announce' ORDER BY id").all() as Array<{
          principal: string;
          outcome: string;
        }>;
        assert.equal(rows.length, 2);
        assert.deepEqual(rows[0], { principal: 'http:node-red', outcome: 'confirmed' });
        assert.equal(rows[1].outcome, 'confirmed');
      } finally {
        db.close();
      }
    } finally {
      await agentDaemon.stop();
    }
  });

  it('every example deploys as it ships (pointed at this daemon) with no warning from its nodes', async () => {
    const files = readdirSync(join(ROOT, 'examples'));
    assert.deepEqual(
      files.filter((f) => !f.endsWith('.json')),
      [],
      'Import > Examples lists every folder under examples/: only flows belong there',
    );
    for (const file of files) {
      const flow = localize(example(file));
      const before = red!.log().length;
      const started = (red!.log().match(/Started flows/g) ?? []).length;
      await deploy(flow);
      await waitFor(`${file} started`, () => (red!.log().match(/Started flows/g) ?? []).length > started, 60_000);
      for (const bridge of flow.filter((n) => n.type === 'hearth-bridge')) await bridgeConnected(bridge.id);
      // A node's warning is logged as `[warn] [<type>:<name or id>]`.
      const warnings = red!
        .log()
        .slice(before)
        .split('\n')
        .filter((line) => /\[warn\]/.test(line));
      assert.deepEqual(warnings, [], `${file} deployed with warnings`);
    }
  });

  it("the editor: each node's form open, pickers filled from the bridge, photographed into test/artifacts/node-red/", async () => {
    const bridge = localize([JSON.parse(JSON.stringify(example('motion-light.json').find((n) => n.type === 'hearth-bridge')))])[0];
    bridge.id = 'gallery.bridge';
    const z = 'gallery.tab';
    const at = (i: number) => ({ x: 200 + (i % 3) * 260, y: 80 + Math.floor(i / 3) * 80 });
    const nodes: Flow = [
      { id: 'gallery.state', type: 'hearth-state', name: '', version: 1, entity: 'hallway_motion.*', to: 'on', for: 0, ignoreUnavailable: true, wires: [[]] },
      {
        id: 'gallery.current',
        type: 'hearth-current-state',
        name: '',
        version: 1,
        entity: 'living_room_climate.temperature',
        op: 'above',
        value: '24',
        wires: [[], []],
      },
      {
        id: 'gallery.device',
        type: 'hearth-device',
        name: '',
        version: 1,
        output: 'data',
        mode: 'call',
        tool: 'kitchen_light',
        argsType: 'json',
        args: '{"action":"turn_on"}',
        approvalWait: 0,
        wires: [[]],
      },
      { id: 'gallery.session', type: 'hearth-session', name: '', principal: 'chat:dashboard', roles: 'owner', ask: 'confirm', wires: [[], []] },
      { id: 'gallery.approval', type: 'hearth-approval', name: '', sendDecided: true, wires: [[], []] },
      {
        id: 'gallery.tool',
        type: 'hearth-tool',
        name: '',
        toolName: 'announce',
        description: 'Say a sentence on the house speakers.',
        parameters: '{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}',
        capability: 'actuator',
        timeout: 10,
        wires: [[], []],
      },
      { id: 'gallery.result', type: 'hearth-tool-result', name: '', wires: [] },
      { id: 'gallery.audit', type: 'hearth-audit', name: '', outcomes: 'denied', wires: [[]] },
    ].map((n, i) => ({ ...n, z, ...(n.type === 'hearth-tool-result' ? {} : { bridge: 'gallery.bridge' }), ...at(i) }));
    await deploy([{ id: z, type: 'tab', label: 'Hearth nodes' }, bridge, ...nodes]);
    await bridgeConnected('gallery.bridge');

    mkdirSync(ARTIFACTS, { recursive: true });
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium-headless-shell',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${red!.url}/?access_token=${adminToken}`);
      await page.waitForFunction(
        () => {
          const RED = (window as any).RED;
          return !!RED?.nodes?.node?.('gallery.state') && !!RED.workspaces?.active?.();
        },
        null,
        { timeout: 60_000 },
      );
      await page.evaluate(() => (window as any).RED.workspaces.show('gallery.tab'));
      await page.screenshot({ path: join(ARTIFACTS, 'palette-and-flow.png') });
      const shots: string[] = [];
      // A tray slides in: wait until the element is inside the window and has stopped moving.
      const settled = (selector: string) =>
        page.waitForFunction(
          (sel) => {
            const el = document.querySelector(sel);
            if (!el) return false;
            const r = el.getBoundingClientRect();
            const w = window as any;
            const key = `${r.left},${r.top}`;
            const same = w.__lastRect === key;
            w.__lastRect = key;
            return same && r.right <= window.innerWidth && r.left >= 0;
          },
          selector,
          { timeout: 20_000, polling: 100 },
        );
      for (const n of nodes) {
        await page.evaluate((id) => {
          const RED = (window as any).RED;
          RED.editor.edit(RED.nodes.node(id));
        }, n.id);
        await page.waitForSelector('.red-ui-tray #dialog-form', { state: 'visible', timeout: 20_000 });
        // The form is the node file's own template, wired by the shared editor script (resources/hearth-editor.js).
        const form = await page.evaluate((type) => {
          const w = window as any;
          return {
            helper: typeof w.hearthEditor?.prepare,
            built: !!document.querySelector(`script[data-template-name="${type}"]`),
            name: !!document.querySelector('#dialog-form #node-input-name'),
            bridge: (document.querySelector('#dialog-form #node-input-bridge') as HTMLSelectElement | null)?.value ?? null,
          };
        }, n.type);
        assert.deepEqual(form, { helper: 'function', built: true, name: true, bridge: n.type === 'hearth-tool-result' ? null : 'gallery.bridge' }, n.type);
        if (n.type === 'hearth-state') assert.equal(await page.inputValue('#node-input-entity'), 'hallway_motion.*');
        if (n.type === 'hearth-current-state') assert.equal(await page.inputValue('#node-input-op'), 'above');
        if (n.type === 'hearth-audit') assert.equal(await page.isChecked('.hearth-check-outcomes[value="denied"]'), true);
        if (n.type === 'hearth-tool') {
          // The shared script made the code editor and filled it from the node.
          await page.waitForFunction(() => /"required"/.test(document.getElementById('node-input-parameters-editor')?.textContent ?? ''), null, {
            timeout: 20_000,
          });
        }
        if (n.type === 'hearth-device') {
          // The tool's argument schema, from the bridge's catalog.
          await page.waitForFunction(() => /"action"/.test(document.getElementById('hearth-device-schema')?.textContent ?? ''), null, { timeout: 20_000 });
        }
        if (n.type === 'hearth-state') {
          // The entity picker completes from the bridge (its catalog fetched first, as a user's first keystroke would).
          await page.evaluate(() => new Promise((ok) => (window as any).hearthEditor.catalog('gallery.bridge', ok)));
          // Typed again when a loaded machine dropped the keystroke the completion listens to (a hang guard, no clock asserted).
          const picked = async () => {
            for (let attempt = 1; ; attempt++) {
              await page.fill('#node-input-entity', '');
              await page.type('#node-input-entity', 'hallway');
              try {
                return await page.waitForSelector('.red-ui-autoComplete-container :text("hallway_motion.occupancy")', { timeout: 10_000 });
              } catch (err) {
                if (attempt >= 6) throw err;
              }
            }
          };
          await picked().catch(async (err) => {
            await page.screenshot({ path: join(ARTIFACTS, 'debug-picker.png') });
            const probe = await page.evaluate(async () => {
              const w = window as any;
              const r = await new Promise((ok) =>
                w.hearthEditor.catalog(w.$('#node-input-bridge').val(), (c: unknown, problem: string) =>
                  ok({
                    c: !!c,
                    problem,
                    bridge: w.$('#node-input-bridge').val(),
                    pickers: typeof w.hearthEditor?.pickers,
                    ac: !!w.$('#node-input-entity').data('nodered-autoComplete'),
                  }),
                ),
              );
              return JSON.stringify(r);
            });
            throw new Error(`${err.message}\n${probe}`);
          });
        }
        if (n.type === 'hearth-session' || n.type === 'hearth-device') {
          // On a daemon bridge the token decides who calls: the fields it ignores are hidden, and a note says so.
          assert.equal(await page.isVisible('#node-input-roles'), false, `${n.type}: roles hidden on a daemon bridge`);
          assert.equal(await page.isVisible('.red-ui-tray .hearth-daemon-note'), true);
          if (n.type === 'hearth-session') assert.equal(await page.isVisible('#node-input-principal'), false);
        }
        if (n.type === 'hearth-audit') {
          // The audit node's entity field completes from the bridge too.
          await page.evaluate(() => new Promise((ok) => (window as any).hearthEditor.catalog('gallery.bridge', ok)));
          for (let attempt = 1; ; attempt++) {
            await page.fill('#node-input-entity', '');
            await page.type('#node-input-entity', 'front');
            try {
              await page.waitForSelector('.red-ui-autoComplete-container :text("front_door.lock")', { timeout: 10_000 });
              break;
            } catch (err) {
              if (attempt >= 6) throw err;
            }
          }
        }
        await settled('#node-input-name');
        const file = join(ARTIFACTS, `${n.type}.png`);
        await page.screenshot({ path: file });
        shots.push(file);
        await page.evaluate(() => (window as any).RED.tray.close());
        await page.waitForSelector('.red-ui-tray #dialog-form', { state: 'detached', timeout: 20_000 });
      }
      // The bridge's form, as a user opens it: the pencil beside a node's bridge.
      await page.evaluate(() => {
        const RED = (window as any).RED;
        RED.editor.edit(RED.nodes.node('gallery.device'));
      });
      await page.waitForSelector('#node-input-btn-bridge-edit', { state: 'visible', timeout: 20_000 });
      await settled('#node-input-btn-bridge-edit');
      await page.click('#node-input-btn-bridge-edit');
      await page.waitForSelector('#node-config-input-mode', { state: 'visible', timeout: 20_000 });
      await settled('#node-config-input-mode');
      assert.equal(await page.inputValue('#node-config-input-mode'), 'daemon');
      await page.screenshot({ path: join(ARTIFACTS, 'hearth-bridge.png') });
      shots.push(join(ARTIFACTS, 'hearth-bridge.png'));
      for (const f of shots) assert.ok(readFileSync(f).length > 10_000, `${f} is a real screenshot`);
      assert.deepEqual(errors, [], 'no script errors in the editor');
    } finally {
      await browser.close();
    }
  });
});
