// Install this package into a Node-RED user directory the way a user does (`npm install <folder>`), or pack it as it is published,
// with the machine's own npm. Under `npm test` the PATH starts with node_modules/.bin, where Node-RED's
// registry brings npm 10: that one ran the package's prepare (tsc, rewriting dist/) despite
// --ignore-scripts, under the feet of a Node-RED loading dist/ in another test file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { delimiter, join, sep } from 'node:path';

/** PATH without any node_modules/.bin: the user's npm, not a dependency's. */
function userPath(): string {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => p && !p.includes(`${sep}node_modules${sep}.bin`))
    .join(delimiter);
}

/** `npm install <root>` in userDir: linked, offline, no scripts (npm test built dist/ already). */
export function npmInstallFolder(root: string, userDir: string): void {
  const env: NodeJS.ProcessEnv = { PATH: userPath(), HOME: process.env.HOME, npm_config_update_notifier: 'false' };
  const r = spawnSync('npm', ['install', root, '--no-audit', '--no-fund', '--offline', '--install-links=false', '--ignore-scripts', '--loglevel=error'], {
    cwd: userDir,
    encoding: 'utf8',
    timeout: 120_000,
    env,
  });
  assert.equal(r.status, 0, `npm install failed:\n${r.stdout}\n${r.stderr}`);
}

/**
 * `npm pack` of `root` into `dest`, as it would be published (no scripts: npm test built dist/ already), unpacked
 * into `dest`/package; returns that folder.
 */
export function npmPackUnpacked(root: string, dest: string): string {
  mkdirSync(dest, { recursive: true });
  const env: NodeJS.ProcessEnv = { PATH: userPath(), HOME: process.env.HOME, npm_config_update_notifier: 'false' };
  const r = spawnSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dest, '--loglevel=error'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
    env,
  });
  assert.equal(r.status, 0, `npm pack failed:\n${r.stdout}\n${r.stderr}`);
  const [{ filename }] = JSON.parse(r.stdout) as Array<{ filename: string }>;
  const tar = spawnSync('tar', ['xzf', join(dest, filename)], { cwd: dest, encoding: 'utf8', timeout: 60_000 });
  assert.equal(tar.status, 0, `tar xzf ${filename} failed: ${tar.stderr}`);
  return join(dest, 'package');
}
