// One running Hearth, every command a client of it: the same answers through the
// daemon's control socket as from a command on its own (--standalone), on one database.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { freePort } from '../helpers/brokers.js';
import { HEARTH } from '../helpers/cli.js';
import { runGroup, spawnGroup, startDaemon, type GroupProcess } from '../helpers/daemon.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-daemon-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

type EntityJson = {
  id: string;
  kind: string;
  name: string;
  area: string | null;
  unit: string | null;
  value: unknown;
  attributes: Record<string, unknown>;
  available: boolean | null;
};

describe('commands with and without the daemon', () => {
  const db = join(dir, 'h.db');
  let port: number;
  let daemon: GroupProcess;
  /** Through the daemon (the default when one runs), and on its own. */
  const viaDaemon = (args: string[]) => runGroup([...args, '--db', db, '--verbose'], { cwd: dir });
  const standalone = (args: string[]) => runGroup([...args, '--db', db, '--broker-port', String(port), '--standalone'], { cwd: dir });

  before(async () => {
    port = await freePort();
    daemon = await startDaemon(['--broker-port', String(port), '--http-port', '0', '--db', db], { cwd: dir });
  });
  after(async () => {
    await daemon?.stop();
  });

  it('the banner says where the control socket is, and its "try" line carries the flags the daemon needs', () => {
    assert.match(daemon.stdout(), /control +\S+h\.db\.sock/);
    // Not on PATH here, and not in the checkout: the line runs as printed, with node and the script's path.
    assert.match(daemon.stdout(), new RegExp(`try +node \\S+/dist/cli/main\\.js devices --db h\\.db --broker-port ${port} +·`));
    assert.match(daemon.stdout(), /a `hearth` command for any folder: run `npm link` once/);
    assert.match(daemon.stdout(), /http +http:\/\/127\.0\.0\.1:\d+/);
    // Every command the banner suggests runs as printed, with the flags this daemon needs.
    assert.match(
      daemon.stdout(),
      new RegExp(`tools +\\d+ host tools \\(per-entity\\): node \\S+/dist/cli/main\\.js tools --db h\\.db --broker-port ${port}\n`),
    );
    assert.match(daemon.stdout(), new RegExp(`token: node \\S+/dist/cli/main\\.js token create <name> --role owner --db h\\.db --broker-port ${port}\\)`));
    assert.doesNotMatch(
      daemon.stdout(),
      /(^|[^/.\w-])hearth (tools|token|devices|call|audit|simulate)\b/m,
      'no bare `hearth` command, which is not on PATH here',
    );
  });

  it('`hearth devices --json`: the same devices, entities and (for what only commands change) states', async () => {
    const a = await viaDaemon(['devices', '--json']);
    const b = await standalone(['devices', '--json']);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    assert.match(a.stderr, /using the running daemon \(.*h\.db\.sock\)/);
    const shape = (out: string) =>
      (JSON.parse(out) as Array<{ id: string; entities: EntityJson[] }>).map((d) => ({
        id: d.id,
        entities: d.entities.map((e) => ({
          id: e.id,
          kind: e.kind,
          name: e.name,
          area: e.area,
          unit: e.unit,
          available: e.available,
          // Sensors drift between the two runs; what only a command changes must agree.
          ...(['sensor', 'binary_sensor', 'camera'].includes(e.kind) ? {} : { value: e.value, attributes: { ...e.attributes, current_temperature: 'drifts' } }),
        })),
      }));
    assert.deepEqual(shape(a.stdout), shape(b.stdout));
    assert.equal(shape(a.stdout).length, 9);
  });

  it('`hearth devices` reads states in words, as the agent does: a white light by its colour temperature, not its raw mireds', async () => {
    const r = await viaDaemon(['devices']);
    assert.equal(r.code, 0, r.stderr);
    const line = r.stdout.split('\n').find((l) => l.includes('kitchen_light'));
    assert.ok(line, r.stdout);
    assert.match(line, /colour temperature about \d+ K \(\w[\w ]*\)/);
    assert.doesNotMatch(line, /color temp \d|color mode/);
  });

  it('`hearth tools` and `hearth tools --json`: word for word the same', async () => {
    for (const args of [['tools'], ['tools', '--json'], ['tools', '--as', 'chat:guest']]) {
      const a = await viaDaemon(args);
      const b = await standalone(args);
      assert.equal(a.code, 0, a.stderr);
      assert.equal(a.stdout, b.stdout, args.join(' '));
    }
  });

  it('`hearth call`: the same refusals word for word, and a real call confirmed either way', async () => {
    for (const [tool, args] of [
      ['front_door_lock', '{"action":"explode"}'],
      ['no_such_tool', '{}'],
    ]) {
      const a = await viaDaemon(['call', tool, args]);
      const b = await standalone(['call', tool, args]);
      assert.equal(a.code, b.code, `${tool}: exit codes`);
      assert.notEqual(a.code, 0);
      assert.equal(a.stdout, b.stdout);
      assert.equal(a.stderr.replace(/^hearth: using the running daemon.*\n/m, ''), b.stderr);
    }
    const on = await viaDaemon(['call', 'living_room_lamp', '{"action":"turn_on"}']);
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /^confirmed: "Living room lamp" .*: on/);
    const off = await standalone(['call', 'living_room_lamp', '{"action":"turn_off"}']);
    assert.equal(off.code, 0, off.stderr);
    assert.match(off.stdout, /^confirmed: "Living room lamp" .*: off/);
    // Both went through the one pipeline into the one audit log.
    const tail = await runGroup(['audit', 'tail', '--db', db], { cwd: dir });
    assert.match(tail.stdout, /living_room_lamp[^\n]*turn_on[\s\S]*living_room_lamp[^\n]*turn_off/);
  });

  it('`hearth approvals`, `approve`, `deny`: the same list and the same answers', async () => {
    const held = await viaDaemon(['call', 'front_door_lock', '{"action":"unlock"}']);
    assert.equal(held.code, 5, held.stderr);
    assert.match(held.stderr, /approval/i);
    const heldToo = await viaDaemon(['call', 'garage_door', '{"action":"open"}']);
    assert.match(heldToo.stderr, /approval/i);
    const strip = (out: string) => (JSON.parse(out) as Array<Record<string, unknown>>).map(({ expiresInMs: _e, ...rest }) => rest);
    const a = await viaDaemon(['approvals', '--json']);
    const b = await standalone(['approvals', '--json']);
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual(strip(a.stdout), strip(b.stdout));
    const [first, second] = strip(a.stdout) as Array<{ id: string; tool: string }>;
    assert.ok(first && second, 'two pending approvals');
    // The list's tip is a command that runs from here as printed (`hearth` is not on PATH in a test).
    const listed = await viaDaemon(['approvals']);
    assert.match(listed.stdout, /\ngrant one: node \S+\/dist\/cli\/main\.js approve <id> {3}refuse it: node \S+\/dist\/cli\/main\.js deny <id>\n/);
    const granted = await viaDaemon(['approve', first.id]);
    assert.equal(granted.code, 0, granted.stderr);
    assert.match(granted.stdout, new RegExp(`^approved ${first.id} `));
    // Asked again, both paths refuse it alike.
    const againD = await viaDaemon(['approve', first.id]);
    const againS = await standalone(['approve', first.id]);
    assert.equal(againD.code, 1);
    assert.equal(againS.code, 1);
    assert.match(againS.stderr, /was already granted by cli:/);
    assert.equal(againD.stderr.replace(/^hearth: using the running daemon.*\n/m, ''), againS.stderr);
    const denied = await standalone(['deny', second.id]);
    assert.match(denied.stdout, new RegExp(`^denied ${second.id} `));
    const badId = [await viaDaemon(['deny', 'not-an-id']), await standalone(['deny', 'not-an-id'])];
    assert.equal(badId[0].code, 2);
    assert.equal(badId[0].stderr.replace(/^hearth: using the running daemon.*\n/m, ''), badId[1].stderr);
  });

  it('`hearth policy test` and `hearth audit tail`: word for word the same, bad input included', async () => {
    for (const args of [
      ['policy', 'test', 'chat:alice', 'front_door_lock', '{"action":"unlock"}'],
      ['policy', 'test', 'chat:alice', 'front_door_lock', '{"action":'],
      ['audit', 'tail', '-n', '5'],
      ['audit', 'tail', '--json', '--entity', 'living_room_lamp.lamp'],
      ['audit', 'tail', '-n', '0'],
    ]) {
      const a = await viaDaemon(args);
      const b = await standalone(args);
      assert.equal(a.code, b.code, args.join(' '));
      assert.equal(a.stdout, b.stdout, args.join(' '));
      assert.equal(a.stderr.replace(/^hearth: using the running daemon.*\n/m, ''), b.stderr, args.join(' '));
      // What the command line can see is wrong (arguments that are not JSON, -n 0) is refused before any daemon is asked.
      const local = args.includes('{"action":') || args.includes('0');
      if (local) assert.doesNotMatch(a.stderr, /daemon/);
      else assert.match(a.stderr, /using the running daemon/);
    }
  });

  it('`hearth policy allow|list|roles|remove` run in the daemon: a new rule decides its next call at once; bad input answered the same', async () => {
    const added = await viaDaemon(['policy', 'deny', 'chat:kid', '--kind', 'light', '--note', 'bedtime', '--json']);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stderr, /using the running daemon/);
    const { rule } = JSON.parse(added.stdout) as { rule: { id: number; subject: string; effect: string } };
    assert.equal(rule.effect, 'deny');
    // The daemon decides with it: its own call refuses, with the rule's note.
    const refused = await viaDaemon(['call', 'kitchen_light', '{"action":"turn_on"}', '--as', 'chat:kid']);
    assert.match(refused.stdout + refused.stderr, /bedtime/);
    // Listed alike through the daemon and on its own (one database).
    const listA = await viaDaemon(['policy', 'list']);
    const listB = await standalone(['policy', 'list']);
    assert.equal(listA.stdout, listB.stdout);
    assert.match(listA.stdout, new RegExp(`^${rule.id} +chat:kid +kind:light`, 'm'));
    const roles = await viaDaemon(['policy', 'roles', 'chat:kid', 'guest']);
    assert.equal(roles.stdout, 'chat:kid: roles guest (set)\n');
    assert.equal((await standalone(['policy', 'roles'])).stdout, (await viaDaemon(['policy', 'roles'])).stdout);
    // Bad input: the same words and exit codes either way, and nothing changed.
    for (const args of [
      ['policy', 'allow', 'kid', '--kind', 'light'],
      ['policy', 'allow', 'chat:kid', '--kind', 'light', '--area', 'Kitchen'],
      ['policy', 'allow', 'chat:kid', '--window', '25:00-26:00'],
      ['policy', 'remove', '99999'],
      ['policy', 'remove', 'x'],
      ['policy', 'remove', '9'.repeat(400)],
      ['policy', 'roles', 'root', 'owner'],
    ]) {
      const a = await viaDaemon(args);
      const b = await standalone(args);
      assert.notEqual(a.code, 0, args.join(' '));
      assert.equal(a.code, b.code, args.join(' '));
      assert.equal(a.stderr.replace(/^hearth: using the running daemon.*\n/m, ''), b.stderr, args.join(' '));
    }
    assert.equal((await viaDaemon(['policy', 'list'])).stdout, listA.stdout, 'no bad input added or removed a rule');
    assert.match((await viaDaemon(['policy', 'remove', '9'.repeat(400)])).stderr, /<id> 9{40}…: too large a number/);
    const removed = await viaDaemon(['policy', 'remove', String(rule.id)]);
    assert.match(removed.stdout, new RegExp(`removed rule #${rule.id}: .*\\n  to add it again: hearth policy deny chat:kid --kind light --note bedtime`));
    const allowedNow = await viaDaemon(['policy', 'test', 'chat:kid', 'kitchen_light', '{"action":"turn_on"}']);
    assert.doesNotMatch(allowedNow.stdout, /bedtime/);
    await viaDaemon(['policy', 'roles', 'chat:kid', '--clear']);
  });

  it('`hearth token` and `hearth memory`: one database, the same answers', async () => {
    const made = await viaDaemon(['token', 'create', 'tablet', '--role', 'owner', '--json']);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stderr, /using the running daemon/);
    assert.equal((JSON.parse(made.stdout) as { principal: string }).principal, 'http:tablet');
    for (const args of [
      ['token', 'list', '--json'],
      ['token', 'list'],
      ['token', 'create', 'tablet'],
      ['memory', 'list'],
      ['memory', 'forget'],
      ['memory', 'forget', '--id', '99'],
    ]) {
      const a = await viaDaemon(args);
      const b = await standalone(args);
      assert.equal(a.code, b.code, args.join(' '));
      assert.equal(a.stdout, b.stdout, args.join(' '));
      assert.equal(a.stderr.replace(/^hearth: using the running daemon.*\n/m, ''), b.stderr, args.join(' '));
    }
    const revoked = await standalone(['token', 'revoke', 'tablet']);
    assert.match(revoked.stdout, /^revoked token tablet/);
    const again = await viaDaemon(['token', 'revoke', 'tablet']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /token tablet was already revoked/);
  });

  it('`hearth mcp` through the daemon lists the same tools as `hearth tools --json`', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [HEARTH, 'mcp', '--db', db, '--verbose'],
      cwd: dir,
      env: { ...(process.env as Record<string, string>), HEARTH_LOG_PRETTY: 'false' },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d));
    const client = new Client({ name: 'daemon-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      const cli = JSON.parse((await viaDaemon(['tools', '--json'])).stdout) as { tools: Array<{ spec: { function: { name: string } } }> };
      assert.deepEqual(tools.map((t) => t.name).sort(), cli.tools.map((t) => t.spec.function.name.replace(/^host__/, '')).sort());
      assert.match(stderr, /using the running daemon/);
    } finally {
      await client.close();
    }
  });

  it('a command that asks for another home (other device files) is not answered by this daemon, and says so', async () => {
    const empty = join(dir, 'no-devices');
    mkdirSync(empty, { recursive: true });
    const r = await runGroup(['tools', '--db', db, '--devices', empty, '--no-demo'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /the daemon for .*h\.db runs another home \(its demo home is on\); running standalone/);
    // An empty home has only the home-wide read tools (state, history, audit, policy), none of the daemon's devices.
    assert.match(r.stdout, /^4 tools/);
    assert.doesNotMatch(r.stdout, /living_room_lamp/);
  });

  it('`hearth chat` through the daemon: the turn runs there, lines travel over the socket', async () => {
    const c = spawnGroup(['chat', '--db', db, '--verbose'], { cwd: dir, stdin: 'turn off the living room lamp\nis the front door locked?\n' });
    const code = await c.exited;
    assert.equal(code, 0, c.stderr());
    assert.match(c.stderr(), /using the running daemon/);
    assert.match(c.stdout(), /Hearth chat as cli:\S+ with the offline intent model/);
    assert.match(c.stdout(), /→ living_room_lamp \{"action":"turn_off"\}/);
    assert.match(c.stdout(), /← confirmed: "Living room lamp"/);
    assert.match(c.stdout(), /the front door lock is locked/);
  });

  it("settings that change answers (--set tools.shape=grouped) are not the daemon's: the command runs on its own and says why", async () => {
    const r = await runGroup(['tools', '--db', db, '--broker-port', String(port), '--set', 'tools.shape=grouped'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /runs another home \(its tools settings differ from these\); running standalone/);
    assert.match(r.stdout, /\(grouped\)/);
  });

  it('without a daemon, a command says in one line that it runs on its own', async () => {
    const other = join(dir, 'other.db');
    const r = await runGroup(['approvals', '--db', other], { cwd: dir });
    // Run from a folder that is not the checkout, with no `hearth` on PATH: the command it names is the script itself.
    assert.equal(r.stderr.split('\n')[0], `hearth: no daemon running for ${other}; running standalone (start one with \`node ${HEARTH} start\`)`);
  });
});
