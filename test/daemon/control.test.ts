// The daemon's control socket as a client meets it: private (0600, ours), clear
// answers to bad input, one daemon per database, and no trust in a file that is not private.
import assert from 'node:assert/strict';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runHearth } from '../helpers/cli.js';
import { rawControl } from '../helpers/control.js';
import { runGroup, startDaemon, type GroupProcess } from '../helpers/daemon.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-control-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the control socket of a running daemon', () => {
  const db = join(dir, 'h.db');
  const sock = `${db}.sock`;
  let daemon: GroupProcess;

  before(async () => {
    daemon = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
  });
  after(async () => {
    await daemon?.stop();
  });

  it('is a socket beside the database, ours, mode 0600, named in the banner', () => {
    const st = lstatSync(sock);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(st.uid, process.getuid!());
    assert.match(daemon.stdout(), new RegExp(`control +${sock.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });

  it('answers bad input with a JSON-RPC error naming what was wrong, and keeps serving', async () => {
    const c = await rawControl(sock);
    try {
      const notJson = await c.send('this is not json');
      assert.equal(notJson.error?.code, -32700);
      assert.match(notJson.error!.message, /line 1 is not JSON/);
      const notObject = await c.send('[1,2]');
      assert.equal(notObject.error?.code, -32600);
      assert.match(notObject.error!.message, /line 2: a request is a JSON object/);
      const noVersion = await c.send('{"id":3,"method":"devices"}');
      assert.equal(noVersion.id, 3);
      assert.match(noVersion.error!.message, /"jsonrpc" must be "2.0"/);
      const unknown = await c.send('{"jsonrpc":"2.0","id":4,"method":"reboot"}');
      assert.equal(unknown.error?.code, -32601);
      assert.match(unknown.error!.message, /no method "reboot"; known: .*call.*devices/);
      const badParam = await c.send('{"jsonrpc":"2.0","id":5,"method":"call","params":{"tool":5}}');
      assert.equal(badParam.error?.code, -32602);
      assert.match(badParam.error!.message, /call: param "tool" must be a string/);
      const missing = await c.send('{"jsonrpc":"2.0","id":6,"method":"call","params":{}}');
      assert.match(missing.error!.message, /call: param "tool" is required/);
      const extra = await c.send('{"jsonrpc":"2.0","id":7,"method":"devices","params":{"colour":"red"}}');
      assert.match(extra.error!.message, /devices: unknown param "colour"/);
      const badPrincipal = await c.send('{"jsonrpc":"2.0","id":8,"method":"tools","params":{"as":"root"}}');
      assert.match(badPrincipal.error!.message, /^as "root": a principal looks like/);
      const badEffect = await c.send('{"jsonrpc":"2.0","id":10,"method":"policy.add","params":{"effect":"maybe","subject":"chat:a","action":"*"}}');
      assert.equal(badEffect.error?.code, -32602);
      assert.match(badEffect.error!.message, /policy.add: param "effect" must be one of allow, deny, confirm/);
      const badRoles = await c.send('{"jsonrpc":"2.0","id":11,"method":"policy.roles","params":{"principal":"chat:a","roles":"owner"}}');
      assert.match(badRoles.error!.message, /policy.roles: param "roles" must be an array of strings/);
      const hello = await c.send('{"jsonrpc":"2.0","id":9,"method":"hello"}');
      assert.equal(hello.result?.name, 'hearth');
      assert.equal(hello.result?.database, db);
      assert.equal(hello.result?.protocol, 2);
    } finally {
      c.socket.destroy();
    }
  });

  it('devices.forget: a device is forgotten only when named, remembered and gone; `hearth devices forget` says why not', async () => {
    const c = await rawControl(sock);
    try {
      const unnamed = await c.send('{"jsonrpc":"2.0","id":1,"method":"devices.forget","params":{}}');
      assert.equal(unnamed.error?.code, -32602);
      assert.match(unnamed.error!.message, /devices.forget: param "device" is required/);
      const nobody = await c.send('{"jsonrpc":"2.0","id":2,"method":"devices.forget","params":{"device":"no_such_device"}}');
      assert.equal(nobody.error?.code, -32004);
      assert.match(nobody.error!.message, /remembers no device "no_such_device"/);
      // The demo's front door is in the home (a device file): a person removes it at its source first.
      const present = await c.send('{"jsonrpc":"2.0","id":3,"method":"devices.forget","params":{"device":"front_door"}}');
      assert.equal(present.error?.code, -32005);
      assert.match(present.error!.message, /front_door is in the home now/);
      const refused = await c.send('{"jsonrpc":"2.0","id":4,"method":"devices.refused"}');
      assert.deepEqual(refused.result, []);
    } finally {
      c.socket.destroy();
    }
    const cli = await runHearth(['devices', 'forget', 'front_door', '--db', db], { cwd: dir });
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /front_door is in the home now/);
  });

  it('devices.confirm-move: only a named device with a move waiting moves; `hearth devices confirm-move` says why not', async () => {
    const c = await rawControl(sock);
    try {
      const unnamed = await c.send('{"jsonrpc":"2.0","id":1,"method":"devices.confirm-move","params":{"to":"x/set"}}');
      assert.equal(unnamed.error?.code, -32602);
      assert.match(unnamed.error!.message, /devices.confirm-move: param "device" is required/);
      const badTo = await c.send('{"jsonrpc":"2.0","id":2,"method":"devices.confirm-move","params":{"device":"front_door","to":7}}');
      assert.equal(badTo.error?.code, -32602);
      // The demo's front door (a device file) is where its file says: no move of it waits.
      const none = await c.send('{"jsonrpc":"2.0","id":3,"method":"devices.confirm-move","params":{"device":"front_door"}}');
      assert.equal(none.error?.code, -32004);
      assert.match(none.error!.message, /no move of "front_door" waits for a confirmation/);
    } finally {
      c.socket.destroy();
    }
    const cli = await runHearth(['devices', 'confirm-move', 'front_door', '--to', 'hearth-demo/elsewhere/set', '--db', db], { cwd: dir });
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /no move of "front_door" waits for a confirmation/);
  });

  it('refuses a request line over 1 MiB and closes that connection', async () => {
    const c = await rawControl(sock);
    const answer = await c.send(`{"jsonrpc":"2.0","id":1,"method":"devices","params":{"x":"${'a'.repeat(1024 * 1024 + 10)}`);
    assert.equal(answer.error?.code, -32600);
    assert.match(answer.error!.message, /longer than 1048576 bytes; closing/);
    await c.closed;
  });

  it('is the only daemon for its database: a second `hearth start` on it stops, naming the socket', async () => {
    const second = await runGroup(['start', '--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
    assert.equal(second.code, 3, second.stderr);
    assert.match(second.stderr, /another hearth daemon is already running for this database/);
    // The first one still answers.
    const c = await rawControl(sock);
    assert.equal((await c.send('{"jsonrpc":"2.0","id":1,"method":"hello"}')).result?.name, 'hearth');
    c.socket.destroy();
  });

  it('a command will not use a socket another user owns (root can make one here by chown)', {
    skip: process.getuid?.() !== 0 ? 'needs root to chown the socket to another user' : false,
  }, async () => {
    chownSync(sock, 65534, 65534);
    try {
      const r = await runGroup(['approvals', '--db', db], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /not using the control endpoint: .*h\.db\.sock belongs to uid 65534, not to you \(uid 0\); running standalone/);
    } finally {
      chownSync(sock, 0, 0);
    }
  });

  it('a command will not use a socket others could open: it says why and runs standalone', async () => {
    chmodSync(sock, 0o666);
    try {
      const r = await runGroup(['approvals', '--db', db], { cwd: dir });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /not using the control endpoint: .*h\.db\.sock has mode 0666; only 0600 \(yours alone\) is trusted; running standalone/);
      assert.equal(r.stdout, 'no approvals are pending\n');
    } finally {
      chmodSync(sock, 0o600);
    }
  });
});

describe('a file in the way of the control socket', () => {
  it('is replaced by a private socket when its mode lets others in', async () => {
    const db = join(dir, 'stale.db');
    writeFileSync(`${db}.sock`, 'left here by someone', { mode: 0o644 });
    chmodSync(`${db}.sock`, 0o644);
    const daemon = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
    try {
      const st = lstatSync(`${db}.sock`);
      assert.ok(st.isSocket(), 'a socket now');
      assert.equal(st.mode & 0o777, 0o600);
      assert.match(daemon.stderr(), /a file with the wrong owner or mode was in the way; replacing it/);
      const r = await runGroup(['approvals', '--db', db, '--verbose'], { cwd: dir });
      assert.match(r.stderr, /using the running daemon/);
    } finally {
      await daemon.stop();
    }
  });
});

describe('where a Unix socket cannot be made (a path over the socket limit): loopback TCP with a token', () => {
  const deep = join(dir, 'a-folder-name-long-enough-that-the-socket-path-no-longer-fits-in-sun-path'.repeat(2));
  const db = join(deep, 'h.db');
  let daemon: GroupProcess;

  before(async () => {
    mkdirSync(deep, { recursive: true });
    daemon = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
  });
  after(async () => {
    await daemon?.stop();
  });

  it('writes a 0600 descriptor beside the database, and commands use it', async () => {
    const st = lstatSync(`${db}.control`);
    assert.equal(st.mode & 0o777, 0o600);
    const { port } = JSON.parse(readFileSync(`${db}.control`, 'utf8')) as { port: number };
    assert.match(daemon.stdout(), new RegExp(`control +127\\.0\\.0\\.1:${port}`));
    const r = await runGroup(['approvals', '--db', db, '--verbose'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`using the running daemon \\(127\\.0\\.0\\.1:${port}\\)`));
  });

  it('is the only daemon for its database here too', async () => {
    const second = await runGroup(['start', '--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
    assert.equal(second.code, 3, second.stderr);
    assert.match(second.stderr, /another hearth daemon \(pid \d+\) is already running for this database/);
  });

  it('refuses a caller without the token, and one with a wrong token', async () => {
    const { port } = JSON.parse(readFileSync(`${db}.control`, 'utf8')) as { port: number };
    for (const first of ['{"jsonrpc":"2.0","id":1,"method":"devices"}', '{"jsonrpc":"2.0","id":1,"method":"hello","params":{"token":"guess"}}']) {
      const socket = createConnection(port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('error', reject);
      });
      socket.setEncoding('utf8');
      let text = '';
      const answered = new Promise<void>((resolve) =>
        socket.on('data', (d: string) => {
          text += d;
          if (text.includes('\n')) resolve();
        }),
      );
      socket.write(`${first}\n`);
      await answered;
      socket.destroy();
      const answer = JSON.parse(text.split('\n')[0]) as { error?: { code: number; message: string } };
      assert.equal(answer.error?.code, -32001, text);
      assert.match(answer.error!.message, /token/);
    }
  });
});
