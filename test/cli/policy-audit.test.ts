// `hearth policy`, `hearth approvals` / `approve` / `deny` and `hearth audit`, as a user runs them:
// the real built CLI against a temp database, and against a running bridge for the approval flow.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { freePort } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-policy-audit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface RuleJson {
  id: number;
  subject: string;
  targetType: string;
  target: string;
  action: string;
  effect: string;
  builtin: boolean;
  description: string;
}

interface AuditRowJson {
  id: number;
  principal: string;
  tool: string;
  entityId: string | null;
  action: string;
  args: Record<string, unknown>;
  decision: string;
  outcome: string;
}

describe('hearth policy (database and device files only, no broker)', () => {
  const db = ['--db', join(dir, 'policy.db'), '--demo'];
  const run = (...args: string[]) => runHearth([...args, ...db], { cwd: dir });
  let ruleId: number;

  it('`policy deny` adds a rule and prints it with its id and description', async () => {
    const { code, stdout, stderr } = await run('policy', 'deny', 'chat:kid', '--kind', 'light');
    assert.equal(code, 0, stderr);
    const m = /^added rule #(\d+): chat:kid may not do anything to kind light/m.exec(stdout);
    assert.ok(m, stdout);
    ruleId = Number(m[1]);
  });

  it('`policy test` says deny and names that rule, with every rule considered', async () => {
    const { code, stdout, stderr } = await run('policy', 'test', 'chat:kid', 'kitchen_light', '{"action":"turn_on"}');
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^deny: chat:kid calling kitchen_light, action turn_on on kitchen_light\.light/);
    assert.match(stdout, new RegExp(`decided by +rule #${ruleId}: chat:kid may not do anything to kind light`));
    assert.match(stdout, new RegExp(`=> +#${ruleId} +deny .*matches and decides`));
    // The built-in default deny matched too, but lost on priority to the rule that decided.
    assert.match(stdout, new RegExp(`\\+ +#2 +deny +-100 .*matches, but rule #${ruleId} decides: its priority -?\\d+ is higher than -100`));

    const json = await run('policy', 'test', 'chat:kid', 'kitchen_light', '{"action":"turn_on"}', '--json');
    assert.equal(json.code, 0, json.stderr);
    const ex = JSON.parse(json.stdout) as { decision: { effect: string; ruleId: number }; request: { action: string; entityId: string } };
    assert.deepEqual([ex.decision.effect, ex.decision.ruleId, ex.request.action, ex.request.entityId], ['deny', ruleId, 'turn_on', 'kitchen_light.light']);
  });

  it('`policy test` without args tests the first action and says so', async () => {
    const { code, stdout, stderr } = await run('policy', 'test', 'chat:kid', 'garage_door');
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^deny: chat:kid calling garage_door, action open on garage_door\.door/);
    assert.match(stdout, /no arguments given: testing garage_door's first action, open/);
  });

  it('`policy list --json` contains the rule; `policy list` prints a table', async () => {
    const { code, stdout, stderr } = await run('policy', 'list', '--json');
    assert.equal(code, 0, stderr);
    const rules = JSON.parse(stdout) as RuleJson[];
    const rule = rules.find((r) => r.id === ruleId);
    assert.deepEqual(
      rule && { subject: rule.subject, targetType: rule.targetType, target: rule.target, action: rule.action, effect: rule.effect, builtin: rule.builtin },
      { subject: 'chat:kid', targetType: 'kind', target: 'light', action: '*', effect: 'deny', builtin: false },
    );
    assert.ok(
      rules.some((r) => r.builtin && r.effect === 'confirm'),
      'built-in rules are listed',
    );
    const text = await run('policy', 'list');
    assert.match(text.stdout, new RegExp(`^${ruleId} +chat:kid +kind:light +\\* +deny +0 +always +- `, 'm'));
  });

  it('`policy remove` removes it, and says when a rule was built in', async () => {
    const removed = await run('policy', 'remove', String(ruleId));
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`^removed rule #${ruleId}: chat:kid may not`));
    const rules = JSON.parse((await run('policy', 'list', '--json')).stdout) as RuleJson[];
    assert.ok(!rules.some((r) => r.id === ruleId));
    const again = await run('policy', 'remove', String(ruleId));
    assert.equal(again.code, 1);
    assert.match(again.stderr, new RegExp(`no rule #${ruleId}`));

    const builtin = rules.find((r) => r.builtin && r.target === 'lock')!;
    const b = await run('policy', 'remove', String(builtin.id));
    assert.equal(b.code, 0, b.stderr);
    assert.match(b.stdout, /removed built-in rule/);
    assert.match(b.stdout, /hearth policy confirm '\*' --kind lock --action unlock --priority 100/);
  });

  it('refuses bad input, naming the argument', async () => {
    const window = await run('policy', 'allow', 'chat:kid', '--kind', 'light', '--window', '25:00-26:00');
    assert.notEqual(window.code, 0);
    assert.match(window.stderr, /--window "25:00-26:00": window\.start: must be a time HH:MM/);

    const two = await run('policy', 'allow', 'role:owner', '--kind', 'light', '--area', 'Kitchen');
    assert.equal(two.code, 2);
    assert.match(two.stderr, /--area and --kind/);

    const action = await run('policy', 'confirm', 'chat:kid', '--action', 'fly');
    assert.equal(action.code, 2);
    assert.match(action.stderr, /--action "fly": action: unknown action/);

    const subject = await run('policy', 'allow', 'kid');
    assert.equal(subject.code, 2);
    assert.match(subject.stderr, /<subject> "kid": names no principal/);

    const rate = await run('policy', 'allow', 'chat:kid', '--max-calls', '3');
    assert.equal(rate.code, 2);
    assert.match(rate.stderr, /--per/);

    const tool = await run('policy', 'test', 'chat:kid', 'no_such_tool');
    assert.equal(tool.code, 2);
    assert.match(tool.stderr, /no tool "no_such_tool"; known: get_state/);

    const args = await run('policy', 'test', 'chat:kid', 'kitchen_light', '{"action":');
    assert.equal(args.code, 2);
    assert.match(args.stderr, /\[args\] is not JSON/);

    const rules = JSON.parse((await run('policy', 'list', '--json')).stdout) as RuleJson[];
    assert.ok(!rules.some((r) => r.subject === 'chat:kid' || r.subject === 'kid'), 'no rule was added by a refused command');
  });

  it('`policy roles` sets and shows roles, which `policy test` uses', async () => {
    const set = await run('policy', 'roles', 'chat:alice', 'owner');
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /chat:alice: roles owner/);
    const show = await run('policy', 'roles', 'chat:alice');
    assert.match(show.stdout, /chat:alice: roles owner/);
    const t = await run('policy', 'test', 'chat:alice', 'living_room_lamp', '{"action":"turn_on"}');
    assert.match(t.stdout, /^allow: /);
    assert.match(t.stdout, /roles +owner/);
  });
});

describe('approvals and the audit log, with a running bridge', () => {
  const dbFile = join(dir, 'bridge.db');
  let port: number;
  let bridge: Spawned;
  let approvalId: string;
  const withDb = (...args: string[]) => [...args, '--db', dbFile];
  const call = (tool: string, args: string) => runHearth(withDb('call', tool, args, '--broker-port', String(port)), { cwd: dir, timeoutMs: 40_000 });
  const tailJson = async (...extra: string[]) => {
    const { code, stdout, stderr } = await runHearth(withDb('audit', 'tail', '--json', ...extra), { cwd: dir });
    assert.equal(code, 0, stderr);
    return JSON.parse(stdout) as AuditRowJson[];
  };

  before(async () => {
    port = await freePort();
    bridge = spawnHearth(['start', '--broker-port', String(port), '--db', dbFile, '--set', 'http.port=0'], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    await bridge?.stop();
  });

  it('opening the garage waits for an approval, which `hearth approvals` lists', async () => {
    const first = await call('garage_door', '{"action":"open"}');
    // Held, not refused: its own exit code, and the answer on stderr.
    assert.equal(first.code, 5, first.stderr);
    assert.equal(first.stdout, '');
    const m = /Approval ([0-9a-f]{12}) is waiting/.exec(first.stderr);
    assert.ok(m, first.stderr);
    approvalId = m[1];

    const list = await runHearth(withDb('approvals'), { cwd: dir });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`^${approvalId} +cli:\\S+ +garage_door +\\{"action":"open"\\} +\\d+ min`, 'm'));
    const json = JSON.parse((await runHearth(withDb('approvals', '--json'), { cwd: dir })).stdout) as Array<{ id: string; status: string; args: unknown }>;
    assert.deepEqual(
      json.map((a) => [a.id, a.status, a.args]),
      [[approvalId, 'pending', { action: 'open' }]],
    );
  });

  it('`hearth approve` grants it; the same call then goes through and is confirmed', async () => {
    const approve = await runHearth(withDb('approve', approvalId, '--by', 'test:parent'), { cwd: dir });
    assert.equal(approve.code, 0, approve.stderr);
    assert.match(approve.stdout, new RegExp(`^approved ${approvalId} .* as test:parent`));
    const twice = await runHearth(withDb('approve', approvalId), { cwd: dir });
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /already granted by test:parent/);

    const second = await call('garage_door', '{"action":"open"}');
    assert.equal(second.code, 0, `${second.stdout}\n${second.stderr}`);
    assert.match(second.stdout, /^confirmed/);

    const all = JSON.parse((await runHearth(withDb('approvals', '--all', '--json'), { cwd: dir })).stdout) as Array<{
      id: string;
      status: string;
      decidedBy: string;
    }>;
    assert.deepEqual(all.find((a) => a.id === approvalId) && [all.find((a) => a.id === approvalId)!.status, all.find((a) => a.id === approvalId)!.decidedBy], [
      'used',
      'test:parent',
    ]);
    const used = await runHearth(withDb('deny', approvalId), { cwd: dir });
    assert.equal(used.code, 1);
    assert.match(used.stderr, /has been used/);
  });

  it('`hearth deny` refuses one; unknown ids are named', async () => {
    const held = await call('front_door_lock', '{"action":"unlock"}');
    assert.equal(held.code, 5);
    const id = /Approval ([0-9a-f]{12}) is waiting/.exec(held.stderr)?.[1];
    assert.ok(id, held.stderr);
    const denied = await runHearth(withDb('deny', id, '--by', 'test:parent'), { cwd: dir });
    assert.equal(denied.code, 0, denied.stderr);
    assert.match(denied.stdout, new RegExp(`^denied ${id} `));
    // The refusal is an audit row: who refused, the held call, denied.
    const refusal = (await tailJson('-n', '5')).find((r) => r.action === 'deny_approval');
    assert.ok(refusal, 'no audit row for the refusal');
    assert.deepEqual(
      [refusal.principal, refusal.tool, refusal.args, refusal.decision, refusal.outcome],
      ['test:parent', 'front_door_lock', { action: 'unlock' }, 'deny', 'denied'],
    );
    const list = await runHearth(withDb('approvals'), { cwd: dir });
    assert.doesNotMatch(list.stdout, new RegExp(id));
    const unknown = await runHearth(withDb('approve', 'abcdef123456'), { cwd: dir });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no approval abcdef123456/);
  });

  it('`audit tail --json` shows the denied row, then the confirmed one, for garage_door.door', async () => {
    const rows = (await tailJson()).filter((r) => r.entityId === 'garage_door.door');
    assert.deepEqual(
      rows.map((r) => [r.tool, r.action, r.decision, r.outcome]),
      [
        ['garage_door', 'open', 'confirm', 'denied'],
        ['garage_door', 'open', 'confirm', 'confirmed'],
      ],
    );
    assert.ok(rows[0].id < rows[1].id);
    const filtered = await tailJson('--entity', 'garage_door.door', '--outcome', 'confirmed');
    assert.deepEqual(
      filtered.map((r) => r.id),
      [rows[1].id],
    );

    const text = await runHearth(withDb('audit', 'tail', '-n', '5'), { cwd: dir });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^TIME +ID +PRINCIPAL +TOOL +ENTITY +ACTION +DECISION +OUTCOME +LATENCY +ERROR/);
    assert.match(text.stdout, /garage_door +garage_door\.door +open +confirm #\d+ +confirmed +\d/);
  });

  it('`audit tail -f` prints rows another process writes, until SIGINT', async () => {
    const follow = spawnHearth(withDb('audit', 'tail', '-f', '-n', '1'), { cwd: dir });
    try {
      await follow.waitForOutput(/^TIME +ID/m, 10_000);
      const lamp = await call('living_room_lamp', '{"action":"turn_on"}');
      assert.equal(lamp.code, 0, lamp.stdout + lamp.stderr);
      await follow.waitForOutput(/living_room_lamp +living_room_lamp\.lamp +turn_on +allow #\d+ +confirmed/, 5_000);
    } finally {
      assert.equal(await follow.stop('SIGINT'), 0);
    }
  });

  it('`audit show` prints every field of a row; an unknown id is an error', async () => {
    const [denied] = await tailJson('--entity', 'garage_door.door', '--outcome', 'denied');
    const show = await runHearth(withDb('audit', 'show', String(denied.id)), { cwd: dir });
    assert.equal(show.code, 0, show.stderr);
    for (const field of ['request id', 'principal', 'args', 'decision', 'rule', 'reason', 'outcome', 'prev hash', 'hash', 'done hash']) {
      assert.match(show.stdout, new RegExp(`^${field} `, 'm'), field);
    }
    assert.match(show.stdout, /^args +\{\n +"action": "open"\n +\}/m);
    assert.match(show.stdout, /^hash +[0-9a-f]{64}$/m);

    const missing = await runHearth(withDb('audit', 'show', '99999'), { cwd: dir });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no audit row 99999: the log has rows up to id \d+/);

    // An id `tail` skips is the outcome entry of a call: the answer names that call.
    const calls = new Set((await tailJson('-n', '1000')).map((r) => r.id as number));
    const outcome = [...Array(Math.max(...calls)).keys()].map((i) => i + 1).find((i) => !calls.has(i));
    assert.ok(outcome, 'some outcome entry between the calls');
    const entry = await runHearth(withDb('audit', 'show', String(outcome)), { cwd: dir });
    assert.equal(entry.code, 1);
    const [, call] = /^hearth: \d+ is the outcome entry of call (\d+), not a call: .*audit show (\d+)\n$/.exec(entry.stderr) ?? [];
    assert.ok(call && calls.has(Number(call)) && Number(call) < outcome, entry.stderr);
  });

  it('`audit export` streams JSON lines or CSV, to stdout or a file', async () => {
    const all = await tailJson('-n', '1000');
    const jsonl = await runHearth(withDb('audit', 'export', '--format', 'jsonl'), { cwd: dir });
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const lines = jsonl.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditRowJson);
    assert.deepEqual(
      lines.map((r) => r.id),
      all.map((r) => r.id),
    );

    const out = join(dir, 'audit.csv');
    const csv = await runHearth(withDb('audit', 'export', '--format', 'csv', '--out', out), { cwd: dir });
    assert.equal(csv.code, 0, csv.stderr);
    assert.equal(csv.stdout, '');
    assert.match(csv.stderr, new RegExp(`exported ${all.length} rows as csv`));
    const text = readFileSync(out, 'utf8');
    assert.match(text, /^id,at,request_id,principal,/);
    assert.match(text, /garage_door,garage_door\.door,open,"\{""action"":""open""\}",confirm/);

    const future = await runHearth(withDb('audit', 'export', '--since', '2999-01-01'), { cwd: dir });
    assert.equal(future.code, 0);
    assert.equal(future.stdout, '');
    const bad = await runHearth(withDb('audit', 'export', '--until', 'soon'), { cwd: dir });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--until "soon": not a time/);
  });

  it('`audit verify` passes on the untouched log', async () => {
    const { code, stdout, stderr } = await runHearth(withDb('audit', 'verify'), { cwd: dir });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^chain verified: \d+ entries \(\d+ calls?, as `hearth audit tail` lists them, and their outcomes\)/);
  });

  it('`audit verify` exits 1 naming row 1 after its args were edited', async () => {
    assert.ok(existsSync(dbFile));
    const raw = new Database(dbFile);
    try {
      assert.equal(raw.prepare(`UPDATE audit_entry SET args='{"action":"close"}' WHERE id=1`).run().changes, 1);
    } finally {
      raw.close();
    }
    const { code, stdout, stderr } = await runHearth(withDb('audit', 'verify'), { cwd: dir });
    assert.equal(code, 1, stdout);
    assert.match(stderr, /audit chain BROKEN at row 1 \(content\): row 1: hash does not match its stored fields/);
  });
});
