// Runs every test/**/*.test.ts with node's test runner (Node 20 does not expand globs itself).
// `node test/run.mjs [filter...]` runs only files whose path contains a filter.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
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
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-timeout=120000', '--test-concurrency=2', ...files],
  { cwd: root, stdio: 'inherit', env: { ...process.env, HEARTH_LOG_PRETTY: 'false' } },
);
process.exit(result.status ?? 1);
