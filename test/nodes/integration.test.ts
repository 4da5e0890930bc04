// The whole way a user goes: `hearth start` runs the demo home; this package is
// installed with npm into a Node-RED user directory; a real Node-RED 4.1
// runtime starts on a free loopback port; the example flow is deployed through
// the admin HTTP API; a prompt over HTTP turns the lamp on (the audit row is in
// the shared database); an unlock waits for a decision over the approvals
// endpoint. Every wait is bounded and every process is stopped.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mqtt, { type MqttClient } from 'mqtt';
import { freePort } from '../helpers/brokers.js';
import { ROOT, startHearthDaemon, type Spawned } from '../helpers/cli.js';
import { installIntoUserDir, type NodeRedRuntime, startNodeRed } from '../helpers/node-red-runtime.js';
import { waitFor } from '../helpers/wait.js';

/** The package's npm name: scoped, as the Node-RED packaging guide asks of new packages. */
const PACKAGE = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string }).name;

// A flow saved before the nodes had a `version` (its bridge has no mode): it must still run embedded, as it did.
const EXAMPLE = join(ROOT, 'test', 'nodes', 'fixtures', 'flow-before-version-1.json');
const SECRET_PASSWORD = 'nr-broker-password-1234';

const dir = mkdtempSync(join(tmpdir(), 'hearth-nr-it-'));
const userDir = join(dir, 'node-red');
const dbPath = join(dir, 'hearth.db');

let hearth: Spawned | undefined;
let red: NodeRedRuntime | undefined;
let watcher: MqttClient | undefined;
let brokerPort = 0;
const retained = new Map<string, string>();

/** A named set-up step: a failure says which step it was (how long steps take is no test's business). */
async function timed<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
  }
}

function base(): string {
  return red!.url;
}

async function http(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 20_000) {
  const res = await fetch(`${base()}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

before(async () => {
  // The package must be built (npm run build) before Node-RED can load it.
  for (const f of ['nodes/hearth-bridge.js', 'nodes/hearth-session.js', 'nodes/lib/bridge.js', 'dist/hearth.js', 'dist/tools/external-tools.js']) {
    assert.ok(existsSync(join(ROOT, f)), `${f} is missing: run npm run build first`);
  }

  // 1. hearth start: embedded broker, demo home, simulator, the database.
  brokerPort = await freePort();
  await timed('hearth start', async () => {
    ({ hearth } = await startHearthDaemon(dbPath, brokerPort, dir));
  });
  watcher = await mqtt.connectAsync(`mqtt://127.0.0.1:${brokerPort}`, { protocolVersion: 4, reconnectPeriod: 200 });
  watcher.on('message', (topic, payload) => retained.set(topic, payload.toString('utf8')));
  await watcher.subscribeAsync(['hearth-demo/living_room_lamp/state', 'hearth-demo/front_door/lock'], { qos: 1 });
  await waitFor('the lamp reports', () => retained.has('hearth-demo/living_room_lamp/state'), 5000);

  // 2. A Node-RED user directory with this package installed by npm (a local folder install links it).
  await timed('npm install <package folder>', () => {
    installIntoUserDir(userDir);
  });
  const installed = JSON.parse(readFileSync(join(userDir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  assert.ok(installed.dependencies?.[PACKAGE], 'npm recorded the package in the user directory');
  assert.ok(existsSync(join(userDir, 'node_modules', ...PACKAGE.split('/'), 'nodes', 'hearth-session.js')));
  // The same install gives the CLI: npm linked its bin.
  const cli = spawnSync(join(userDir, 'node_modules', '.bin', 'hearth'), ['--version'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(cli.status, 0, `hearth --version from the installed package failed:\n${cli.stdout}\n${cli.stderr}`);
  assert.match(cli.stdout, /\d+\.\d+\.\d+/);

  // 3. Node-RED on a free loopback port, with a fixed credential secret.
  red = await timed('node-red start', () => startNodeRed({ dir, userDir, credentialSecret: 'hearth-integration-test-secret' }));
});

after(async () => {
  await red?.stop();
  await watcher?.endAsync(true).catch(() => undefined);
  await hearth?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('Node-RED integration', () => {
  it('the installed package shows its nodes in the palette', async () => {
    const r = await http('GET', '/nodes', undefined, { accept: 'application/json' });
    assert.equal(r.status, 200, r.text);
    const sets = (r.json as Array<{ module: string; types: string[]; enabled: boolean; err?: string }>).filter((s) => s.module === PACKAGE);
    const types = sets.flatMap((s) => s.types).sort();
    assert.deepEqual(types, [
      'hearth-approval',
      'hearth-audit',
      'hearth-bridge',
      'hearth-current-state',
      'hearth-device',
      'hearth-session',
      'hearth-state',
      'hearth-tool',
      'hearth-tool-result',
    ]);
    for (const s of sets) assert.equal(s.err, undefined, `${s.types.join(',')}: ${s.err}`);
    // The editor gets each node's form, its help (from locales/en-US) and its message catalog. Every node's
    // file has its form as a static template and registers itself (what the palette manager and the flow
    // library's scorecard read), after loading the one shared editor script (this package's resources/).
    const html = await http('GET', '/nodes', undefined, { accept: 'text/html' });
    const nodeSets = html.text.split(/(?=<!-- --- \[red-module:)/).filter((set) => set.includes(`[red-module:${PACKAGE}/`));
    assert.equal(nodeSets.length, 8, 'one node set a nodes/*.html file');
    for (const t of types) {
      const set = nodeSets.find((x) => x.includes(`RED.nodes.registerType('${t}'`));
      assert.ok(set, `${t} registers itself with RED.nodes.registerType`);
      assert.match(set, new RegExp(`<script type="text/html" data-template-name="${t}">`), `${t} has its form's template`);
      assert.match(
        set,
        /^[\s\S]*?<script src="resources\/@hearth-bridge\/hearth\/hearth-editor\.js"><\/script>\s*<script type="text\/html"/,
        `${t} loads the shared editor script first`,
      );
      assert.match(html.text, new RegExp(`data-help-name="${t}"`), `${t} help`);
    }
    const helper = await fetch(`${base()}/resources/${PACKAGE}/hearth-editor.js`);
    assert.equal(helper.status, 200);
    assert.match(helper.headers.get('content-type') ?? '', /javascript/);
    assert.match(await helper.text(), /window\.hearthEditor = \{/);
    assert.match(html.text, /<h3>Properties<\/h3>[\s\S]*<h3>Inputs<\/h3>[\s\S]*<h3>Outputs<\/h3>[\s\S]*<h3>Details<\/h3>/);
    const catalogs = await http('GET', '/nodes/messages?lng=en-US', undefined, { accept: 'application/json' });
    assert.equal(catalogs.status, 200, catalogs.text);
    assert.equal(catalogs.json[`${PACKAGE}/hearth-session`]['hearth-session'].status.thinking, 'thinking');
    assert.equal(catalogs.json[`${PACKAGE}/hearth-bridge`]['hearth-bridge'].label.broker, 'Broker URL');
    // Import > Examples lists the package's flows, and nothing else (no empty folders).
    const listed = await http('GET', `/library/examples/flows/${PACKAGE}`, undefined, { accept: 'application/json' });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.json,
      ['chat-dashboard', 'flow-tool', 'hearth-chat', 'late-door-unlock', 'motion-light'].map((fn) => ({ fn })),
    );
    // The example flow is offered under Import > Examples.
    const examples = await http('GET', `/library/examples/flows/${PACKAGE}/hearth-chat`, undefined, { accept: 'application/json' });
    assert.equal(examples.status, 200, examples.text);
    for (const name of ['chat-dashboard', 'late-door-unlock', 'motion-light', 'flow-tool']) {
      const ex = await http('GET', `/library/examples/flows/${PACKAGE}/${name}`, undefined, { accept: 'application/json' });
      assert.equal(ex.status, 200, `${name}: ${ex.text}`);
    }
    // Every node's form and help have a version and document their outputs.
    for (const t of types.filter((x) => x !== 'hearth-tool-result')) {
      const help = new RegExp(`data-help-name="${t}"(?:(?!data-help-name)[\\s\\S])*?<h3>Outputs</h3>`);
      if (t !== 'hearth-bridge') assert.match(html.text, help, `${t} help documents its outputs`);
    }
  });

  it('deploys a flow from before version 1 (migrated: its bridge stays embedded) through the admin API; a prompt over HTTP turns the lamp on; the audit row is in the database', async () => {
    const flow = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as Array<Record<string, unknown>>;
    const bridge = flow.find((n) => n.type === 'hearth-bridge')!;
    bridge.broker = `mqtt://127.0.0.1:${brokerPort}`;
    bridge.database = dbPath;
    bridge.credentials = { username: 'nr', password: SECRET_PASSWORD };
    const deployed = await timed('deploy', () => http('POST', '/flows', flow, { 'Node-RED-Deployment-Type': 'full' }));
    assert.equal(deployed.status, 204, deployed.text);

    // Credentials went to the encrypted credentials file, not the flow file.
    const flowsFile = readFileSync(join(userDir, 'flows.json'), 'utf8');
    assert.doesNotMatch(flowsFile, new RegExp(SECRET_PASSWORD));
    assert.ok(existsSync(join(userDir, 'flows_cred.json')));
    assert.doesNotMatch(readFileSync(join(userDir, 'flows_cred.json'), 'utf8'), new RegExp(SECRET_PASSWORD));

    assert.equal(retained.get('hearth-demo/living_room_lamp/state'), 'OFF');
    // The http-in route exists once the flow has started.
    const r = await timed('first prompt', async () => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await http('POST', '/hearth/chat', { text: 'turn on the living room lamp' });
        if (res.status !== 404 || Date.now() > deadline) return res;
        await new Promise((ok) => setTimeout(ok, 200));
      }
    });
    assert.equal(r.status, 200, `${r.text}\n${red!.log()}`);
    assert.match(r.json.answer, /lamp/i);
    assert.equal(r.json.result.stopReason, 'completed');
    assert.equal(r.json.result.principal, 'chat:phone');
    assert.deepEqual(
      r.json.result.toolCalls.map((c: { name: string }) => c.name),
      ['living_room_lamp'],
    );
    await waitFor('the lamp reports ON', () => retained.get('hearth-demo/living_room_lamp/state') === 'ON', 5000);

    const [auditId] = r.json.result.auditIds as number[];
    assert.equal(typeof auditId, 'number');
    const db = new Database(dbPath, { readonly: true });
    try {
      const row = db.prepare('SELECT * FROM audit WHERE id = ?').get(auditId) as Record<string, unknown> | undefined;
      assert.ok(row, `audit row ${auditId} is in ${dbPath}`);
      assert.equal(row.principal, 'chat:phone');
      assert.equal(row.tool, 'living_room_lamp');
      assert.equal(row.entity_id, 'living_room_lamp.lamp');
      assert.equal(row.outcome, 'confirmed');
      assert.equal(row.session, r.json.session);
    } finally {
      db.close();
    }
  });

  it('an unlock waits for a decision over the approvals endpoint, then goes through', async () => {
    assert.match(retained.get('hearth-demo/front_door/lock') ?? '', /^locked$/i);
    const chat = http('POST', '/hearth/chat', { text: 'unlock the front door', session: 'door' }, {}, 30_000);
    let pending: Array<{ id: string; tool: string; kind: string; args: Record<string, unknown> }> = [];
    const deadline = Date.now() + 60_000;
    while (!pending.length && Date.now() < deadline) {
      const list = await http('GET', '/hearth/approvals');
      assert.equal(list.status, 200, list.text);
      pending = list.json;
      if (!pending.length) await new Promise((ok) => setTimeout(ok, 200));
    }
    assert.equal(pending.length, 1, 'one request waits');
    assert.equal(pending[0].tool, 'front_door_lock');
    assert.deepEqual(pending[0].args, { action: 'unlock' });
    const wrong = await http('POST', '/hearth/approvals/no-such-id', { decision: 'allow_once' });
    assert.equal(wrong.status, 400, wrong.text);
    assert.match(wrong.json.error, /no pending/);
    const decided = await http('POST', `/hearth/approvals/${pending[0].id}`, { decision: 'allow_once' });
    assert.equal(decided.status, 200, decided.text);
    assert.equal(decided.json.status, 'allow_once');
    const answer = await chat;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result.stopReason, 'completed');
    assert.match(answer.json.result.toolCalls[0].result, /^confirmed/);
    await waitFor('the lock reports unlocked', () => /^unlocked$/i.test(retained.get('hearth-demo/front_door/lock') ?? ''), 5000);
    const db = new Database(dbPath, { readonly: true });
    try {
      const row = db.prepare('SELECT * FROM audit WHERE id = ?').get(answer.json.result.auditIds[0]) as Record<string, unknown>;
      assert.equal(row.outcome, 'confirmed');
      assert.equal(row.decision, 'confirm');
      assert.match(String(row.reason), /approved/);
    } finally {
      db.close();
    }
  });
});
