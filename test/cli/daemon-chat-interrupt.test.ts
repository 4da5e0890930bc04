// Ctrl+C in `hearth chat` served by the daemon does what it does in a chat on its own:
// it stops the running turn and the chat goes on; at the prompt it ends the chat.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { copyDemoDevices } from '../helpers/demo-devices.js';
import { freePort } from '../helpers/brokers.js';
import { spawnGroup, startDaemon } from '../helpers/daemon.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-daemon-chat-'));
after(() => rmSync(dir, { recursive: true, force: true }));

it('Ctrl+C during a turn interrupts the turn, the chat goes on; Ctrl+C at the prompt ends it', async () => {
  // The demo devices without their simulator: nothing answers the garage, so the turn waits for it (20 s).
  const devices = copyDemoDevices(dir);
  const dbPath = join(dir, 'h.db');
  const db = openDatabase(dbPath);
  new SqlitePolicy(db).add({ subject: 'role:owner', targetType: 'kind', target: 'cover', action: 'close', effect: 'allow' });
  db.close();
  const daemon = await startDaemon(['--no-demo', '--devices', devices, '--broker-port', String(await freePort()), '--db', dbPath, '--http-port', '0'], {
    cwd: dir,
  });
  try {
    const chat = spawnGroup(['chat', '--db', dbPath, '--verbose'], { cwd: dir, stdin: 'pipe' });
    try {
      await chat.waitFor('using the running daemon', 'stderr');
      await chat.waitFor('/quit to leave');
      chat.child.stdin!.write('close the garage door\n');
      await chat.waitFor(/→ garage_door/);
      chat.child.kill('SIGINT');
      await chat.waitFor('(interrupted)');
      // Still chatting: the next line is answered.
      chat.child.stdin!.write('is the front door locked?\n');
      await chat.waitFor(/front door lock/i);
      chat.child.kill('SIGINT');
      assert.equal(await chat.exited, 0, `the chat ends cleanly\nstdout: ${chat.stdout()}\nstderr: ${chat.stderr()}`);
      assert.match(chat.stdout(), /conversation saved as/);
    } finally {
      await chat.stop();
    }
  } finally {
    await daemon.stop();
  }
});
