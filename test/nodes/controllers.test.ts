// The plain controllers behind the Node-RED nodes, without Node-RED: the
// bridge's config mapping, external (flow) tools through policy, approvals
// and audit, the approval hub across processes, and the audit feed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { newCall } from '../../src/tools/pipeline.js';
import { createExternalTool, ExternalToolError, externalToolsOf } from '../../src/tools/external-tools.js';
import { openDatabase } from '../../src/db/database.js';
import { SqliteApprovals } from '../../src/policy/approvals.js';
import { SqliteAuditLog } from '../../src/audit/store.js';
import { silentLogger } from '../../src/log.js';
import { ApprovalHub, NotPendingError } from '../../nodes/lib/approvals.js';
import { AuditFeed, rowFilter } from '../../nodes/lib/audit-feed.js';
import { bridgeConfig } from '../../nodes/lib/bridge.js';
import { resultFrom } from '../../nodes/lib/flow-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-nr-ctl-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('bridgeConfig', () => {
  it('maps the node settings onto Hearth config: URL, credentials, paths against the user directory, model', () => {
    const c = bridgeConfig({
      brokerUrl: 'mqtts://broker.lan:8883',
      username: 'u',
      password: 'p',
      devicePaths: ['devices', '/abs/more.yaml'],
      demo: false,
      databasePath: 'data/hearth.db',
      provider: 'openai',
      baseUrl: 'http://127.0.0.1:11434/v1',
      model: 'llama3.2:3b',
      apiKey: 'k',
      cwd: dir,
    });
    assert.equal(c.mqtt.url, 'mqtts://broker.lan:8883');
    assert.equal(c.mqtt.username, 'u');
    assert.equal(c.mqtt.password, 'p');
    assert.deepEqual(c.devices.paths, [join(dir, 'devices'), '/abs/more.yaml']);
    assert.equal(c.demo, false);
    assert.equal(c.database.path, join(dir, 'data/hearth.db'));
    assert.equal(c.agent.provider, 'openai');
    assert.equal(c.agent.model, 'llama3.2:3b');
    assert.equal(c.agent.apiKey, 'k');
  });

  it('defaults: a running `hearth start` on 127.0.0.1:1883, hearth.db in the user directory; embedded uses the URL port', () => {
    const c = bridgeConfig({ cwd: dir });
    assert.equal(c.mqtt.url, 'mqtt://127.0.0.1:1883');
    assert.equal(c.database.path, join(dir, 'hearth.db'));
    assert.equal(c.agent.provider, 'intent');
    const e = bridgeConfig({ cwd: dir, embedded: true, brokerUrl: 'mqtt://127.0.0.1:18830' });
    assert.equal(e.mqtt.url, undefined);
    assert.equal(e.mqtt.embedded.port, 18830);
  });

  it('a config file underneath; the node settings win; a bad value names the field', () => {
    const file = join(dir, 'hearth.yaml');
    writeFileSync(file, 'mqtt:\n  url: mqtt://10.0.0.2:1883\ntools:\n  shape: grouped\n');
    const c = bridgeConfig({ cwd: dir, configFile: file, brokerUrl: 'mqtt://10.0.0.3:1883' });
    assert.equal(c.mqtt.url, 'mqtt://10.0.0.3:1883');
    assert.equal(c.tools.shape, 'grouped');
    // The node's own field, as the form calls it.
    assert.throws(() => bridgeConfig({ cwd: dir, brokerUrl: 'http://nope' }), /^Error: Broker URL \(broker\): "http:\/\/nope" must begin mqtt:\/\//);
    assert.throws(() => bridgeConfig({ cwd: dir, brokerUrl: 'mqtt://a:1883,b:1883' }), /Broker URL \(broker\): node 2 of 2 \("b:1883"\)/);
    assert.throws(() => bridgeConfig({ cwd: dir, provider: 'openai' }), /agent\.model/);
  });
});

describe('external (flow) tools', () => {
  let broker: TestBroker;
  let home: TestHome;
  const owner = { id: 'chat:owner', roles: ['owner'] };

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker);
  });
  after(async () => {
    await home?.close();
    await broker?.stop();
  });

  const deps = () => ({ policy: home.hearth.policy, audit: home.hearth.audit, approvals: home.hearth.approvals, log: silentLogger });

  it('checks the definition: name rules, reserved names, object schemas, a description', () => {
    const base = { description: 'd', parameters: { type: 'object' }, capability: 'read' as const, handler: () => 'x', source: 'test' };
    assert.throws(() => createExternalTool({ ...base, name: 'a__b' }, deps()), ExternalToolError);
    assert.throws(() => createExternalTool({ ...base, name: 'get_state' }, deps()), /reserved/);
    assert.throws(() => createExternalTool({ ...base, name: 'ok', parameters: { type: 'string' } }, deps()), /type object/);
    assert.throws(
      () => createExternalTool({ ...base, name: 'ok', parameters: { type: 'object', properties: { a: { type: 'nonsense' } } } }, deps()),
      /not a valid JSON Schema/,
    );
    assert.throws(() => createExternalTool({ ...base, name: 'ok', description: ' ' }, deps()), /description/);
  });

  it('joins the tool set (attached from outside until ToolSet has it), refuses a taken name, and leaves again', () => {
    const tools = externalToolsOf(home.hearth.tools);
    assert.equal(externalToolsOf(home.hearth.tools), tools, 'one per tool set');
    let changed = 0;
    const onChanged = () => changed++;
    home.hearth.tools.on('changed', onChanged);
    const tool = createExternalTool(
      { name: 'weather', description: 'The weather outside.', parameters: { type: 'object' }, capability: 'read', handler: () => 'sunny', source: 'test' },
      deps(),
    );
    const remove = tools.add(tool);
    assert.equal(home.hearth.tools.get('weather'), tool);
    assert.equal(home.hearth.tools.get('host__weather'), tool);
    assert.ok(home.hearth.tools.all().includes(tool));
    assert.ok(home.hearth.tools.forPrincipal({ id: 'chat:guest', roles: [] }).includes(tool), 'reads are for everyone by default');
    assert.throws(() => tools.add(tool), /already declared/);
    assert.throws(() => tools.add({ ...tool, name: 'living_room_lamp' }), /device tool is already named/);
    remove();
    assert.equal(home.hearth.tools.get('weather'), undefined);
    assert.equal(changed, 2);
    home.hearth.tools.off('changed', onChanged);
  });

  it('an actuator under a confirm rule: held with an approval, runs once granted, audited with who approved', async () => {
    home.hearth.policy.add({
      subject: 'role:owner',
      targetType: 'tool',
      target: 'open_gate',
      action: 'actuate',
      effect: 'confirm',
      priority: 50,
      note: 'test: the gate needs a person',
    });
    let runs = 0;
    const tool = createExternalTool(
      {
        name: 'open_gate',
        description: 'Open the gate.',
        parameters: { type: 'object', properties: { seconds: { type: 'integer', default: 10 } } },
        capability: 'actuator',
        handler: () => {
          runs++;
          return 'gate open';
        },
        source: 'flow:n1',
      },
      deps(),
    );
    const direct = (await tool.handler({}, newCall(owner, 'open_gate'))) as {
      text: string;
      isError: boolean;
      details: { approvalId: string; auditId: number };
    };
    assert.equal(direct.isError, true);
    assert.match(direct.text, /needs approval: .*the gate needs a person/);
    assert.equal(runs, 0);
    assert.equal(home.hearth.audit.get(direct.details.auditId)!.outcome, 'denied');
    assert.ok(home.hearth.approvals.grant(direct.details.approvalId, 'flow:approver'));
    const ok = (await tool.handler({}, newCall(owner, 'open_gate'))) as { text: string; details: { auditId: number } };
    assert.equal(ok.text, 'gate open');
    assert.equal(runs, 1);
    const row = home.hearth.audit.get(ok.details.auditId)!;
    assert.equal(row.outcome, 'confirmed');
    assert.deepEqual(row.args, { seconds: 10 });
    assert.match(row.reason, new RegExp(`approved: ${direct.details.approvalId}`));
    // The same request id again is one action: answered from the row, not run again.
    const call = newCall(owner, 'open_gate', { approvalId: 'person' });
    await tool.handler({}, call);
    const again = (await tool.handler({}, call)) as { text: string; details: { duplicate: boolean } };
    assert.equal(again.details.duplicate, true);
    assert.equal(runs, 2);
  });

  it('a handler that throws is a failed call with a failed row; an aborted call is interrupted', async () => {
    home.hearth.policy.add({ subject: 'role:owner', targetType: 'tool', target: 'flaky|slow', action: 'actuate', effect: 'allow' });
    const flaky = createExternalTool(
      {
        name: 'flaky',
        description: 'x',
        parameters: { type: 'object' },
        capability: 'actuator',
        handler: () => {
          throw new Error('speaker offline');
        },
        source: 't',
      },
      deps(),
    );
    const r = (await flaky.handler({}, newCall(owner, 'flaky'))) as { text: string; isError: boolean; details: { auditId: number } };
    assert.equal(r.isError, true);
    assert.match(r.text, /speaker offline/);
    assert.equal(home.hearth.audit.get(r.details.auditId)!.outcome, 'failed');
    const slow = createExternalTool(
      { name: 'slow', description: 'x', parameters: { type: 'object' }, capability: 'actuator', handler: () => new Promise(() => {}), source: 't' },
      deps(),
    );
    const abort = new AbortController();
    const pending = slow.handler({}, newCall(owner, 'slow', { signal: abort.signal }));
    setTimeout(() => abort.abort(new Error('interrupted')), 50);
    const s = (await pending) as { isError: boolean; details: { auditId: number } };
    assert.equal(s.isError, true);
    assert.equal(home.hearth.audit.get(s.details.auditId)!.outcome, 'interrupted');
  });
});

describe('flow tool results', () => {
  it('turns what a flow answers into a tool result', () => {
    assert.deepEqual(resultFrom('done it'), { text: 'done it' });
    assert.deepEqual(resultFrom({ text: 'ok', details: { n: 1 } }), { text: 'ok', details: { n: 1 } });
    assert.deepEqual(resultFrom({ temperature: 3 }), { text: '{"temperature":3}' });
    assert.deepEqual(resultFrom('x', 'boom'), { text: 'failed: boom', isError: true });
    assert.deepEqual(resultFrom('x', { message: 'bad' }), { text: 'failed: bad', isError: true });
    assert.deepEqual(resultFrom({ error: 'nope' }), { error: 'nope' });
  });
});

describe('ApprovalHub', () => {
  it('sees holds another process writes (polling), reports them decided there, and answers permission requests', async () => {
    const path = join(dir, 'hub.db');
    const mine = openDatabase(path);
    const theirs = openDatabase(path);
    // The nodes are built against the package's dist/; the store from src/ is the same class at run time.
    const hub = new ApprovalHub(new SqliteApprovals(mine) as unknown as ConstructorParameters<typeof ApprovalHub>[0], { pollMs: 50, permissionTtlMs: 200 });
    const other = new SqliteApprovals(theirs);
    const requested: string[] = [];
    const decided: string[] = [];
    hub.on('requested', (r) => requested.push(`${r.kind}:${r.id}`));
    hub.on('decided', (o) => decided.push(`${o.id}:${o.status}`));
    const detach = hub.attach();
    try {
      const a = other.request({ principal: 'cli:x', tool: 'front_door_lock', args: { action: 'unlock' }, reason: 'test' });
      await waitFor('seen', () => requested.includes(`confirm:${a.id}`), 2000);
      assert.equal(hub.pending().length, 1);
      other.deny(a.id, 'cli:y');
      await waitFor('decided elsewhere', () => decided.includes(`${a.id}:denied`), 2000);
      assert.throws(() => hub.decide(a.id, 'allow_once', 'flow:n'), NotPendingError);

      const b = other.request({ principal: 'cli:x', tool: 'garage_door', args: { action: 'open' }, reason: 'test' });
      await waitFor('seen b', () => requested.includes(`confirm:${b.id}`), 2000);
      const outcome = hub.decide(b.id, 'allow_always', 'flow:n');
      assert.equal(outcome.kind, 'confirm');
      assert.equal(other.get(b.id)?.status, 'granted');
      assert.equal(other.get(b.id)?.decidedBy, 'flow:n');

      const answers: string[] = [];
      hub.askPermission({ id: 'p1', principal: 'chat:a', tool: 'kitchen_light', args: {}, reason: 'r', session: 's', offersAlways: true }, (d) =>
        answers.push(d),
      );
      hub.askPermission({ id: 'p2', principal: 'chat:a', tool: 'kitchen_light', args: {}, reason: 'r', session: 's', offersAlways: true }, (d) =>
        answers.push(d),
      );
      assert.equal(hub.decide('p1', 'allow_once', 'flow:n').status, 'allow_once');
      await waitFor('p2 expires as deny', () => answers.length === 2, 2000);
      assert.deepEqual(answers, ['allow_once', 'deny']);
      assert.ok(decided.includes('p2:expired'));
      assert.throws(() => hub.decide('p2', 'allow_once', 'flow:n'), NotPendingError);
      assert.throws(() => hub.decide('p3', 'maybe' as never, 'flow:n'), /decision must be one of/);
    } finally {
      detach();
      hub.close();
      mine.close();
      theirs.close();
    }
  });
});

describe('AuditFeed', () => {
  it('emits completed rows once, from this connection at once and from another by polling, pending ones when they complete', async () => {
    const path = join(dir, 'feed.db');
    const a = new SqliteAuditLog(openDatabase(path));
    const b = new SqliteAuditLog(openDatabase(path));
    const entry = (id: string) => ({
      requestId: id,
      principal: 'chat:a',
      session: null,
      runId: null,
      tool: 'lamp',
      entityId: 'lamp.x',
      action: 'turn_on',
      args: {},
      decision: 'allow',
      ruleId: null,
      reason: '',
    });
    a.record(entry('before'), { outcome: 'confirmed' });
    const seen: number[] = [];
    const feed = new AuditFeed(a as unknown as ConstructorParameters<typeof AuditFeed>[0], (row) => seen.push(row.id), { pollMs: 30 });
    feed.start();
    try {
      const r1 = a.record(entry('r1'), { outcome: 'denied', error: 'no' });
      assert.deepEqual(seen, [r1], 'this connection: at once');
      const r2 = b.begin(entry('r2'));
      const r3 = b.record(entry('r3'), { outcome: 'failed', error: 'x' });
      await waitFor('r3 by polling', () => seen.includes(r3), 2000);
      assert.ok(!seen.includes(r2), 'pending is not emitted');
      b.finish(r2, { outcome: 'confirmed' });
      await waitFor('r2 once complete', () => seen.includes(r2), 2000);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(new Set(seen).size, seen.length);
      assert.equal(seen.length, 3, 'the row written before the feed started is not replayed');
    } finally {
      feed.stop();
    }
    const filter = rowFilter({ outcomes: ['denied'], principal: 'chat:*', entity: 'lamp.*|other.*' });
    assert.equal(filter(a.get(seen[0])!), true);
    assert.equal(filter({ ...a.get(seen[0])!, principal: 'voice:x' }), false);
  });
});
