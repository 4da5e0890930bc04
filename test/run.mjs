// Runs every test/**/*.test.ts with node's test runner (Node 20 does not expand globs itself).
// `node test/run.mjs [filter...]` runs only files whose path contains a filter.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const found = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'fixtures' && name !== 'artifacts') walk(p);
    } else if (name.endsWith('.test.ts')) found.push(relative(root, p));
  }
};
walk(join(root, 'test'));
const filters = process.argv.slice(2);
const files = filters.length ? found.filter((f) => filters.some((x) => f.includes(x))) : found;
if (!files.length) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
// Every process the tests start lives in a process group that dies with the run. The runner and the test files
// (and anything they spawn plainly) share the runner's group; processes a test puts in a group of its own
// (test/helpers/processes.ts) are recorded in GROUPS_DIR by pgid, and whatever is still recorded when the run
// ends, passes, fails, times out or is interrupted, is killed here.
const groupsDir = mkdtempSync(join(tmpdir(), 'hearth-test-groups-'));

// The suite's PATH has no `hearth`, whatever the developer's has: after `npm link` (or a global install) a `hearth`
// is on it, and the commands Hearth prints follow it (src/cli/command-name.ts), so tests of what a fresh checkout
// prints would read another text. A PATH folder holding a `hearth` is replaced by a folder of links to everything
// else in it, so node, npm and the rest are found as before.
function pathWithoutHearth(path) {
  return path
    .split(delimiter)
    .map((dir, i) => {
      if (!dir || !['hearth', 'hearth.cmd'].some((bin) => existsSync(join(dir, bin)))) return dir;
      const shadow = join(groupsDir, `path-${i}`);
      mkdirSync(shadow);
      for (const name of readdirSync(dir)) if (name !== 'hearth' && name !== 'hearth.cmd') symlinkSync(join(dir, name), join(shadow, name));
      return shadow;
    })
    .join(delimiter);
}
// A per-test bound is a safety net against a hang, not a speed assertion: generous, so a busy machine passes.
const runner = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=300000', '--test-concurrency=2', ...files], {
  cwd: root,
  stdio: 'inherit',
  detached: true,
  env: {
    ...process.env,
    PATH: pathWithoutHearth(process.env.PATH ?? ''),
    HEARTH_LOG_PRETTY: 'false',
    HEARTH_TEST_GROUPS_DIR: groupsDir,
    HEARTH_RUNTIME_DIR: join(groupsDir, 'runtime'),
  },
});

function killGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // gone already
  }
}

function cleanUp() {
  if (runner.pid) killGroup(runner.pid, 'SIGKILL');
  const left = [];
  for (const name of readdirSync(groupsDir)) {
    const pgid = Number(name);
    if (Number.isInteger(pgid) && pgid > 1 && killGroup(pgid, 'SIGKILL')) left.push(`${pgid}: ${readFileSync(join(groupsDir, name), 'utf8').trim()}`);
  }
  rmSync(groupsDir, { recursive: true, force: true });
  if (left.length) console.error(`test/run.mjs: killed ${left.length} process group(s) the tests left running:\n  ${left.join('\n  ')}`);
}

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(sig, () => {
    if (runner.pid) killGroup(runner.pid, sig);
    cleanUp();
    process.kill(process.pid, sig);
  });
}

runner.on('exit', (code, signal) => {
  cleanUp();
  process.exit(code ?? (signal ? 1 : 0));
});
