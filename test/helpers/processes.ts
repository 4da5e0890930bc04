// Every process a test starts runs in a process group of its own, and the group is killed when the test file
// ends, however it ends: a normal exit (exit hook), a signal from the test runner (signal hooks), or the test
// process itself killed hard, in which case test/run.mjs kills every group still recorded in
// HEARTH_TEST_GROUPS_DIR once the run is over. Killing the group, not the pid, also takes whatever the process
// started itself (a hearth daemon's broker, a Node-RED runtime's workers).
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const live = new Set<ChildProcess>();
const GROUPS_DIR = process.env.HEARTH_TEST_GROUPS_DIR;

function killGroupNow(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone already
  }
}

let hooked = false;
function installHooks(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const child of live) killGroupNow(child, 'SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const child of live) killGroupNow(child, 'SIGKILL');
      // Die of the same signal, as the runner expects, once every other hook has run.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

/** spawn(), in a new process group that is killed with the test file. */
export function spawnInGroup(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  installHooks();
  const child = spawn(command, args, { ...options, detached: true });
  if (child.pid === undefined) return child; // failed to start: 'error' follows
  const pid = child.pid;
  live.add(child);
  const record = GROUPS_DIR ? join(GROUPS_DIR, String(pid)) : undefined;
  if (record) {
    try {
      writeFileSync(record, `${command} ${args.join(' ')}\n`);
    } catch {
      // the safety net is best effort; the hooks above still run
    }
  }
  child.once('exit', () => {
    live.delete(child);
    // The leader is gone; anything it left in its group goes with it.
    killGroupNow(child, 'SIGKILL');
    if (record) rmSync(record, { force: true });
  });
  return child;
}

/** Send a signal to the child's whole process group. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (child.exitCode !== null || child.signalCode !== null) return;
  killGroupNow(child, signal);
}
