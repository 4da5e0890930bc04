// Policy commands through a running daemon's control socket (the methods a
// `hearth policy` client calls): a rule's note is one line of plain text and
// a principal's roles are a few short names. Before, a note could carry
// terminal escape sequences (clear the screen, retitle the window, fake the
// lines around it) that `hearth policy list` and `add` print raw, and a
// principal could be given 100 000 roles or a 100 000-character one, stored
// in the database and echoed on every listing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { startDaemon, type GroupProcess } from '../helpers/daemon.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-policy-bounds-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Answer {
  result?: unknown;
  error?: { code: number; message: string };
}

/** One request per connection: send it, read the one answer line. */
async function ask(path: string, method: string, params: Record<string, unknown>): Promise<Answer> {
  const socket: Socket = createConnection(path);
  socket.setEncoding('utf8');
  let buffered = '';
  try {
    return await new Promise<Answer>((resolve, reject) => {
      socket.on('data', (chunk: string) => {
        buffered += chunk;
        const nl = buffered.indexOf('\n');
        if (nl >= 0) resolve(JSON.parse(buffered.slice(0, nl)) as Answer);
      });
      socket.once('error', reject);
      socket.once('close', () => reject(new Error(`closed before an answer to ${method}`)));
      socket.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })}\n`);
    });
  } finally {
    socket.destroy();
  }
}

/** What the person at the terminal would read: the answer's text or its error. */
// The daemon answers with data (control protocol 2): what it said is its answer as JSON, or its error.
const said = (a: Answer) => `${a.result === undefined ? '' : JSON.stringify(a.result)}${a.error?.message ?? ''}`;
const refused = (a: Answer) => !!a.error;

describe('policy commands keep notes and roles to plain, bounded text', () => {
  const db = join(dir, 'h.db');
  const sock = `${db}.sock`;
  let daemon: GroupProcess;
  before(async () => {
    daemon = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
  });
  after(async () => {
    await daemon?.stop();
  });

  it('refuses a note with control characters, naming the note', async () => {
    for (const note of ['\u001b[2J\u001b]0;owned\u0007', 'line one\nadded rule #1: everyone may do anything', 'bell\u0007']) {
      const a = await ask(sock, 'policy.add', { effect: 'allow', subject: 'chat:guest', action: 'read', note });
      assert.ok(refused(a), `accepted ${JSON.stringify(note)}: ${said(a)}`);
      assert.match(said(a), /note/);
    }
    const list = await ask(sock, 'policy.list', {});
    assert.doesNotMatch(said(list), /\u001b|\u0007|owned/);
    const plain = await ask(sock, 'policy.add', { effect: 'allow', subject: 'chat:guest', action: 'read', note: 'guests read — a plain note' });
    assert.ok(!refused(plain), said(plain));
  });

  it('refuses too many roles, or too long a role name', async () => {
    const many = await ask(sock, 'policy.roles', { principal: 'chat:alice', roles: Array.from({ length: 1000 }, (_, i) => `r${i}`) });
    assert.ok(refused(many), said(many).slice(0, 200));
    assert.match(said(many), /roles/);
    const long = await ask(sock, 'policy.roles', { principal: 'chat:alice', roles: ['x'.repeat(10_000)] });
    assert.ok(refused(long), said(long).slice(0, 200));
    // The error names the problem without echoing the whole string back.
    assert.ok(said(long).length < 1000, `the refusal is ${said(long).length} characters`);
    const now = await ask(sock, 'policy.roles', { principal: 'chat:alice' });
    assert.deepEqual(now.result, [{ principal: 'chat:alice', roles: [] }]);
    const fine = await ask(sock, 'policy.roles', { principal: 'chat:alice', roles: ['owner', 'kids'] });
    assert.deepEqual(fine.result, [{ principal: 'chat:alice', roles: ['owner', 'kids'], changed: 'set' }]);
  });
});
