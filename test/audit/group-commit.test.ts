// Group commit of pending rows (issue 18), audit.durability full on real SQLite
// files: a caller is resolved (and may publish) only once the fsync covering its
// own row is done; callers arriving while an fsync runs share the next commit
// and the next fsync; a failed fsync fails every waiting caller closed. Counted
// with the store's commit counter and the fsyncs, never with timings.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { FileHandle } from 'node:fs/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mqtt from 'mqtt';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { Bridge } from '../../src/bridge.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/database.js';
import { CommandGate } from '../../src/devices/command-gate.js';
import { silentLogger } from '../../src/log.js';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { Pipeline } from '../../src/tools/pipeline.js';
import { ToolSet } from '../../src/tools/tool-set.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { auditEntry, tempDatabases } from './support.js';

const { root, open } = tempDatabases('hearth-audit-group-');
let n = 0;

/** A store whose fsyncs are real, counted, and each held until the test releases it. */
function heldStore() {
  const path = join(root, `db${++n}`, 'hearth.db');
  const db = openDatabase(path);
  open.push(db);
  const events: string[] = [];
  const waiting: Array<() => void> = [];
  let fail: Error | undefined;
  const audit = new SqliteAuditLog(db, {
    walSync: {
      datasync: async (h: FileHandle) => {
        events.push('fsync started');
        await new Promise<void>((r) => waiting.push(r));
        if (fail) throw fail;
        await h.datasync();
        events.push('fsync done');
      },
    },
  });
  const rows = () => (new Database(path, { readonly: true }).prepare('SELECT count(*) AS n FROM audit').get() as { n: number }).n;
  return {
    db,
    audit,
    events,
    rows,
    fsyncsHeld: () => waiting.length,
    release: () => waiting.shift()?.(),
    failNext: (err: Error) => (fail = err),
  };
}

describe('group commit of pending rows (audit.durability full)', () => {
  it('a lone caller pays one commit and one fsync, and is resolved only after that fsync', async () => {
    const s = heldStore();
    assert.equal(s.audit.durability, 'full');
    const fsyncs = s.audit.fsyncs;
    const p = s.audit.beginDurable(auditEntry()).then((id) => (s.events.push('resolved'), id));
    // Committed at once (another connection sees it), not yet resolved: its fsync is held.
    assert.equal(s.audit.pendingCommits, 1);
    assert.equal(s.rows(), 1);
    await waitFor('the fsync to start', () => s.fsyncsHeld() === 1);
    assert.deepEqual(s.events, ['fsync started']);
    s.release();
    const id = await p;
    assert.deepEqual(s.events, ['fsync started', 'fsync done', 'resolved']);
    assert.equal(s.audit.fsyncs, fsyncs + 1);
    assert.equal(s.audit.get(id)!.outcome, 'pending');
  });

  it('callers arriving while an fsync runs share the next commit and the next fsync', async () => {
    const s = heldStore();
    const fsyncs = s.audit.fsyncs;
    const first = s.audit.beginDurable(auditEntry());
    await waitFor('the first fsync to start', () => s.fsyncsHeld() === 1);
    const resolved: number[] = [];
    const rest = Array.from({ length: 6 }, () => s.audit.beginDurable(auditEntry()).then((id) => (resolved.push(id), id)));
    // Queued, not committed: they wait for the running fsync to end.
    assert.equal(s.audit.pendingCommits, 1);
    assert.equal(s.rows(), 1);
    s.release();
    const firstId = await first;
    await waitFor('the second group to commit', () => s.audit.pendingCommits === 2 && s.fsyncsHeld() === 1);
    assert.equal(s.rows(), 7, 'the six rows went in together');
    assert.deepEqual(resolved, [], 'none of the six is resolved before its own fsync');
    s.release();
    const ids = await Promise.all(rest);
    assert.equal(s.audit.pendingCommits, 2, 'seven callers, two commits');
    assert.equal(s.audit.fsyncs, fsyncs + 2, 'and two fsyncs');
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'rows keep the order the callers came in');
    assert.equal(new Set([firstId, ...ids]).size, 7);
    assert.equal(s.audit.verify().ok, true);
  });

  it('a duplicate request id in a group fails alone; the others are written', async () => {
    const s = heldStore();
    const first = s.audit.beginDurable(auditEntry({ requestId: 'dup-1' }));
    await waitFor('the first fsync to start', () => s.fsyncsHeld() === 1);
    const ok = s.audit.beginDurable(auditEntry());
    const dup = s.audit.beginDurable(auditEntry({ requestId: 'dup-1' }));
    s.release();
    await first;
    await waitFor('the second fsync', () => s.fsyncsHeld() === 1);
    s.release();
    await assert.rejects(dup, (err: { code?: string }) => err.code === 'AUDIT_DUPLICATE');
    assert.equal(s.audit.get(await ok)!.outcome, 'pending');
    assert.equal(s.rows(), 2);
  });

  it('a failed fsync fails every caller of its group closed and records their rows not_sent', async () => {
    const s = heldStore();
    const a = s.audit.beginDurable(auditEntry());
    await waitFor('the fsync to start', () => s.fsyncsHeld() === 1);
    s.failNext(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    s.release();
    await assert.rejects(a, (err: { code?: string; message: string }) => err.code === 'AUDIT_UNAVAILABLE' && /EIO/.test(err.message));
    const row = s.audit.tail(1)[0]!;
    assert.equal(row.outcome, 'not_sent');
    assert.match(row.error!, /could not be made durable/);
    // Every later write waits for the disk on this thread (synchronous=FULL), and callers still get their row.
    assert.equal(s.db.pragma('synchronous', { simple: true }), 2);
    const id = await s.audit.beginDurable(auditEntry());
    assert.equal(s.audit.get(id)!.outcome, 'pending');
  });

  it('synchronous writes (begin, record, finish) are fsynced before they return', () => {
    const s = heldStore();
    const before = s.audit.fsyncs;
    const id = s.audit.begin(auditEntry());
    assert.equal(s.audit.fsyncs, before + 1);
    s.audit.finish(id, { outcome: 'confirmed', latencyMs: 1 });
    s.audit.record(auditEntry(), { outcome: 'denied', error: 'no rule' });
    assert.equal(s.audit.fsyncs, before + 3);
    assert.equal(s.fsyncsHeld(), 0, 'none of them waited on the thread pool');
  });
});

// ------------------------------------------------------------ through the pipeline, with a real broker

const DEVICES = ['devices:', '  - id: lamp', '    name: Lamp', '    entities:', '      light: { kind: switch, state_topic: gc/lamp/state, command_topic: gc/lamp/set }', ''].join('\n');

function homeDir(name: string, url: string) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'devices'), { recursive: true });
  writeFileSync(join(dir, 'devices', 'lamp.yaml'), DEVICES);
  const flags = { 'mqtt.url': url, 'mqtt.protocolVersion': '4', 'devices.paths': [join(dir, 'devices')], demo: false, 'database.path': join(dir, 'hearth.db'), 'tools.shape': 'per-entity' };
  return { dir, flags, dbPath: join(dir, 'hearth.db') };
}

/** A client on the lamp's command topic; it echoes each command on the state topic when `echo` is set. */
async function lampWatcher(url: string, echo: boolean) {
  const client = await mqtt.connectAsync(url, { protocolVersion: 4 });
  const got: string[] = [];
  client.on('message', (topic, payload) => {
    if (topic !== 'gc/lamp/set') return;
    got.push(payload.toString());
    if (echo) void client.publishAsync('gc/lamp/state', payload.toString(), { retain: true });
  });
  await client.subscribeAsync('gc/lamp/set', { qos: 1 });
  return { got, client };
}

describe('group commit through the pipeline (aedes)', () => {
  let broker: TestBroker;
  after(async () => broker?.stop());

  it('publishes nothing until the pending row is on disk', async () => {
    broker ??= await startAedes();
    const { dir, flags, dbPath } = homeDir('inproc', broker.url);
    const { config } = loadConfig({ cwd: dir, env: {}, flags });
    const db = openDatabase(dbPath);
    open.push(db);
    const policy = new SqlitePolicy(db);
    policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow' });
    const order: string[] = [];
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    const audit = new SqliteAuditLog(db, {
      walSync: {
        datasync: async (h) => {
          order.push('fsync started');
          await held;
          await h.datasync();
          order.push('fsync done');
        },
      },
    });
    const bridge = await Bridge.start({ config, log: silentLogger, connectWaitMs: 5000 });
    const watcher = await lampWatcher(broker.url, true);
    try {
      watcher.client.on('message', (t) => t === 'gc/lamp/set' && order.push('published'));
      const pipeline = new Pipeline({ registry: bridge.registry, cache: bridge.cache, mqtt: bridge.connection, gate: new CommandGate(bridge.registry, bridge.connection), policy, audit, log: silentLogger });
      const tools = new ToolSet(bridge.registry, pipeline, policy, config.tools);
      const tool = tools.all().find((t) => t.capability === 'actuator')!.name;
      const result = tools.call(tool, { action: 'turn_on' }, OWNER);
      await waitFor('the fsync of the pending row', () => order.includes('fsync started'));
      assert.equal(audit.tail(1)[0]!.outcome, 'pending', 'the row is committed');
      // A round trip through the broker after the row was committed: had the command left, it would be here first.
      await watcher.client.publishAsync('gc/lamp/probe', 'x', { qos: 1 });
      assert.deepEqual(watcher.got, [], 'nothing published while the fsync is held');
      release();
      const r = await result;
      assert.match(r.text!, /^confirmed/);
      assert.deepEqual(order.slice(0, 3), ['fsync started', 'fsync done', 'published']);
      await waitFor('the outcome', () => audit.tail(1)[0]!.outcome === 'confirmed');
    } finally {
      await watcher.client.endAsync(true);
      await bridge.close();
      await audit.close();
    }
  });

  it('a process killed while its pending row waits for the disk has published nothing; the next start marks the row interrupted', async () => {
    broker ??= await startAedes();
    const { dir, flags, dbPath } = homeDir('killed', broker.url);
    const dist = resolve('dist');
    const script = join(dir, 'caller.mjs');
    // The caller's fsync never finishes: the process is killed between its commit and its publish.
    writeFileSync(
      script,
      `
import { Bridge } from ${JSON.stringify(join(dist, 'bridge.js'))};
import { SqliteAuditLog } from ${JSON.stringify(join(dist, 'audit/store.js'))};
import { loadConfig } from ${JSON.stringify(join(dist, 'config/load.js'))};
import { openDatabase } from ${JSON.stringify(join(dist, 'db/database.js'))};
import { CommandGate } from ${JSON.stringify(join(dist, 'devices/command-gate.js'))};
import { silentLogger } from ${JSON.stringify(join(dist, 'log.js'))};
import { SqlitePolicy } from ${JSON.stringify(join(dist, 'policy/engine.js'))};
import { Pipeline } from ${JSON.stringify(join(dist, 'tools/pipeline.js'))};
import { ToolSet } from ${JSON.stringify(join(dist, 'tools/tool-set.js'))};
const { config } = loadConfig({ cwd: ${JSON.stringify(dir)}, env: {}, flags: ${JSON.stringify(flags)} });
const db = openDatabase(config.database.path);
const policy = new SqlitePolicy(db);
policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow' });
const audit = new SqliteAuditLog(db, { walSync: { datasync: async () => { console.log('fsync-held'); await new Promise(() => setInterval(() => {}, 1000)); } } });
const bridge = await Bridge.start({ config, log: silentLogger, connectWaitMs: 5000 });
const pipeline = new Pipeline({ registry: bridge.registry, cache: bridge.cache, mqtt: bridge.connection, gate: new CommandGate(bridge.registry, bridge.connection), policy, audit, log: silentLogger });
const tools = new ToolSet(bridge.registry, pipeline, policy, config.tools);
const tool = tools.all().find((t) => t.capability === 'actuator').name;
console.log('result', (await tools.call(tool, { action: 'turn_on' }, { id: 'cli:test-owner', roles: ['owner'] })).text);
`,
    );
    const watcher = await lampWatcher(broker.url, false);
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      await waitFor('the caller to reach its fsync', () => out.includes('fsync-held'), 20_000);
      child.kill('SIGKILL');
      await exited;
      await watcher.client.publishAsync('gc/lamp/probe', 'x', { qos: 1 });
      assert.deepEqual(watcher.got, [], 'no command left the killed process');
      assert.doesNotMatch(out, /result/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await watcher.client.endAsync(true);
    }
    // The next start: the committed row is there, pending, and is marked interrupted.
    const db = openDatabase(dbPath);
    open.push(db);
    const audit = new SqliteAuditLog(db);
    assert.equal(audit.tail(1)[0]!.outcome, 'pending');
    assert.equal(audit.markInterrupted(0), 1);
    assert.equal(audit.tail(1)[0]!.outcome, 'interrupted');
    assert.equal(audit.verify().ok, true);
    await audit.close();
  });
});
