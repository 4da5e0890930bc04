// Group commit of pending rows (issue 18), audit.durability full on real SQLite
// files: a caller is resolved (and may publish) only once the fsync covering its
// own row is done; callers arriving in one turn of the event loop share one
// commit and one fsync; a failed fsync fails every caller of its group closed.
// Counted with the store's commit counter and the fsyncs, never with timings.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fdatasyncSync, mkdirSync, writeFileSync } from 'node:fs';
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

/** A store whose fsyncs (on this thread) are real and logged, and fail when told to. */
function store() {
  const path = join(root, `db${++n}`, 'hearth.db');
  const db = openDatabase(path);
  open.push(db);
  const events: string[] = [];
  let fail: Error | undefined;
  const audit = new SqliteAuditLog(db, {
    walSync: {
      datasyncNow: (fd: number) => {
        if (fail) throw fail;
        fdatasyncSync(fd);
        events.push('fsync');
      },
    },
  });
  const rows = () => {
    const reader = new Database(path, { readonly: true });
    try {
      return (reader.prepare('SELECT count(*) AS n FROM audit').get() as { n: number }).n;
    } finally {
      reader.close();
    }
  };
  return { db, audit, events, rows, failNext: (err: Error) => (fail = err) };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('group commit of pending rows (audit.durability full)', () => {
  it('a lone caller pays one commit and one fsync, and is resolved only after that fsync', async () => {
    const s = store();
    assert.equal(s.audit.durability, 'full');
    const fsyncs = s.audit.fsyncs;
    const commits = s.audit.pendingCommits;
    s.events.length = 0;
    const id = await s.audit.beginDurable(auditEntry()).then((id) => {
      s.events.push('resolved');
      return id;
    });
    assert.deepEqual(s.events, ['fsync', 'resolved']);
    assert.equal(s.audit.pendingCommits, commits + 1);
    assert.equal(s.audit.fsyncs, fsyncs + 1);
    assert.equal(s.audit.get(id)!.outcome, 'pending');
  });

  it('callers arriving in the same turn share one commit and one fsync; a later caller gets its own', async () => {
    const s = store();
    const fsyncs = s.audit.fsyncs;
    const commits = s.audit.pendingCommits;
    const resolved: number[] = [];
    const seven = Array.from({ length: 7 }, () =>
      s.audit.beginDurable(auditEntry()).then((id) => {
        resolved.push(id);
        return id;
      }),
    );
    // Queued until the end of the turn: nothing committed, nobody resolved.
    assert.equal(s.rows(), 0);
    assert.deepEqual(resolved, []);
    const ids = await Promise.all(seven);
    assert.equal(s.audit.pendingCommits, commits + 1, 'seven callers, one commit');
    assert.equal(s.audit.fsyncs, fsyncs + 1, 'and one fsync');
    assert.equal(s.rows(), 7);
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
      'rows keep the order the callers came in',
    );
    assert.equal(new Set(ids).size, 7);
    await turn();
    await s.audit.beginDurable(auditEntry());
    assert.equal(s.audit.pendingCommits, commits + 2);
    assert.equal(s.audit.fsyncs, fsyncs + 2);
    assert.equal(s.audit.verify().ok, true);
  });

  it('a duplicate request id in a group fails alone; the others are written', async () => {
    const s = store();
    const first = s.audit.beginDurable(auditEntry({ requestId: 'dup-1' }));
    const ok = s.audit.beginDurable(auditEntry());
    const dup = s.audit.beginDurable(auditEntry({ requestId: 'dup-1' }));
    await first;
    await assert.rejects(dup, (err: { code?: string }) => err.code === 'AUDIT_DUPLICATE');
    assert.equal(s.audit.get(await ok)!.outcome, 'pending');
    assert.equal(s.rows(), 2);
  });

  it('a failed fsync fails every caller of its group closed and records their rows not_sent', async () => {
    const s = store();
    s.failNext(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    const a = s.audit.beginDurable(auditEntry());
    const b = s.audit.beginDurable(auditEntry());
    for (const p of [a, b]) await assert.rejects(p, (err: { code?: string; message: string }) => err.code === 'AUDIT_UNAVAILABLE' && /EIO/.test(err.message));
    const rows = s.audit.tail(2);
    assert.deepEqual(
      rows.map((r) => r.outcome),
      ['not_sent', 'not_sent'],
    );
    assert.match(rows[0]!.error!, /could not be made durable/);
    // Every later write waits for the disk on its own (synchronous=FULL), and callers still get their row.
    assert.equal(s.db.pragma('synchronous', { simple: true }), 2);
    const id = await s.audit.beginDurable(auditEntry());
    assert.equal(s.audit.get(id)!.outcome, 'pending');
  });

  it('synchronous writes (begin, record, finish) are fsynced before they return', () => {
    const s = store();
    const before = s.audit.fsyncs;
    const id = s.audit.begin(auditEntry());
    assert.equal(s.audit.fsyncs, before + 1);
    s.audit.finish(id, { outcome: 'confirmed', latencyMs: 1 });
    s.audit.record(auditEntry(), { outcome: 'denied', error: 'no rule' });
    assert.equal(s.audit.fsyncs, before + 3);
  });
});

// ------------------------------------------------------------ through the pipeline, with a real broker

const DEVICES = [
  'devices:',
  '  - id: lamp',
  '    name: Lamp',
  '    entities:',
  '      light: { kind: switch, state_topic: gc/lamp/state, command_topic: gc/lamp/set }',
  '',
].join('\n');

function homeDir(name: string, url: string) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'devices'), { recursive: true });
  writeFileSync(join(dir, 'devices', 'lamp.yaml'), DEVICES);
  const flags = {
    'mqtt.url': url,
    'mqtt.protocolVersion': '4',
    'devices.paths': [join(dir, 'devices')],
    demo: false,
    'database.path': join(dir, 'hearth.db'),
    'tools.shape': 'per-entity',
  };
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
    const audit = new SqliteAuditLog(db, {
      walSync: {
        datasyncNow: (fd) => {
          fdatasyncSync(fd);
          order.push('fsync done');
        },
      },
    });
    const bridge = await Bridge.start({ config, log: silentLogger, connectWaitMs: 5000 });
    const watcher = await lampWatcher(broker.url, true);
    try {
      watcher.client.on('message', (t) => t === 'gc/lamp/set' && order.push('published'));
      const pipeline = new Pipeline({
        registry: bridge.registry,
        cache: bridge.cache,
        mqtt: bridge.connection,
        gate: new CommandGate(bridge.registry, bridge.connection),
        policy,
        audit,
        log: silentLogger,
      });
      const tools = new ToolSet(bridge.registry, pipeline, policy, config.tools);
      const tool = tools.all().find((t) => t.capability === 'actuator')!.name;
      order.length = 0;
      const r = await tools.call(tool, { action: 'turn_on' }, OWNER);
      assert.match(r.text!, /^confirmed/);
      assert.deepEqual(order.slice(0, 2), ['fsync done', 'published'], 'the command left after the fsync of its row');
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
import { fdatasyncSync, writeSync } from 'node:fs';\nlet hold = false;\nconst audit = new SqliteAuditLog(db, { walSync: { datasyncNow: (fd) => { if (!hold) return fdatasyncSync(fd); writeSync(1, 'fsync-held\\n'); for (;;); } } });
const bridge = await Bridge.start({ config, log: silentLogger, connectWaitMs: 5000 });
const pipeline = new Pipeline({ registry: bridge.registry, cache: bridge.cache, mqtt: bridge.connection, gate: new CommandGate(bridge.registry, bridge.connection), policy, audit, log: silentLogger });
const tools = new ToolSet(bridge.registry, pipeline, policy, config.tools);
const tool = tools.all().find((t) => t.capability === 'actuator').name;
hold = true;
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
