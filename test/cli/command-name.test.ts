// Every command Hearth prints runs as printed, wherever Hearth runs from: the checkout before `npm link` (`npm run
// hearth --`), after it (`hearth`), a package installed in a folder (`npx hearth`), a global install (`hearth`).
// The installed cases use the real layout npm makes, built on disk from `npm pack` (a real `npm install` of the
// tarball needs the registry for its dependencies' metadata, which a test does not reach): the package under
// <folder>/node_modules/@hearth-bridge/hearth with its bin linked in node_modules/.bin, or under
// <prefix>/lib/node_modules with its bin in <prefix>/bin. Each printed command is then run as a shell would.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hearthCommand, plainCommandNote } from '../../src/cli/command-name.js';
import { freePort } from '../helpers/brokers.js';
import { HEARTH, ROOT } from '../helpers/cli.js';
import { runGroup, startDaemon, type GroupProcess } from '../helpers/daemon.js';
import { npmPackUnpacked } from '../helpers/npm-install.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-command-name-'));
after(() => rmSync(dir, { recursive: true, force: true }));
/** The suite's PATH (test/run.mjs leaves no `hearth` on it), as a fresh checkout's user has. */
const PATH = process.env.PATH ?? '';

/** A folder holding only a `hearth` that is `target`, executable as npm makes a bin it links (tsc writes it 0644). */
function binWith(name: string, target: string): string {
  const bin = join(dir, name);
  mkdirSync(bin, { recursive: true });
  chmodSync(target, 0o755);
  symlinkSync(target, join(bin, 'hearth'));
  return bin;
}

/** Run a printed command line in a shell, as a person pastes it. */
function shell(line: string, cwd: string, path = PATH) {
  const r = spawnSync('sh', ['-c', line], {
    cwd,
    env: { ...process.env, PATH: path, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('the command name hints print', () => {
  it('in the checkout without a `hearth` on PATH: `npm run hearth --`, which runs', () => {
    assert.equal(hearthCommand(ROOT, PATH), 'npm run hearth --');
    const r = shell('npm run hearth -- --version', ROOT);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /\d+\.\d+\.\d+/);
    // Elsewhere, the script itself.
    assert.equal(hearthCommand(dir, PATH), `node ${join(ROOT, 'dist', 'cli', 'main.js')}`);
  });

  it('after `npm link`: `hearth`; another program called hearth first on PATH is not this Hearth', () => {
    const linked = binWith('linked', HEARTH);
    assert.equal(hearthCommand(ROOT, `${linked}${delimiter}${PATH}`), 'hearth');
    assert.equal(hearthCommand(dir, `${linked}${delimiter}${PATH}`), 'hearth');
    assert.equal(plainCommandNote('hearth'), undefined, 'no note on how to get what is there');
    const r = shell('hearth --version', dir, `${linked}${delimiter}${PATH}`);
    assert.equal(r.code, 0, r.out);
    const fake = join(dir, 'fake-hearth.sh');
    writeFileSync(fake, '#!/bin/sh\necho not hearth\n', { mode: 0o755 });
    const other = binWith('other', fake);
    assert.equal(hearthCommand(ROOT, `${other}${delimiter}${linked}${delimiter}${PATH}`), 'npm run hearth --');
  });

  it('a call held for approval, run as `npm run hearth -- call` in the checkout, says to approve it with a command that runs', async () => {
    const db = join(dir, 'held.db');
    const daemon: GroupProcess = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: dir });
    try {
      const held = shell(`npm run --silent hearth -- call garage_door '{"action":"open"}' --db ${db}`, ROOT);
      const approve = /`(npm run hearth -- approve [0-9a-f]+)`/.exec(held.out)?.[1];
      assert.ok(approve, `the held call names the approve command as this shell runs it:\n${held.out}`);
      assert.doesNotMatch(held.out, /`hearth approve/);
      const granted = shell(approve, ROOT);
      assert.equal(granted.code, 0, granted.out);
      assert.match(granted.out, /approved/);
    } finally {
      await daemon.stop();
    }
  });
});

describe('installed as a package (the layout npm makes, from npm pack)', () => {
  let folder: string;
  let prefix: string;
  let packageDir: string;

  before(() => {
    const unpacked = npmPackUnpacked(ROOT, join(dir, 'pack'));
    // npm install <tarball> in a folder: the package in node_modules, its bin linked in node_modules/.bin.
    folder = join(dir, 'my-home');
    packageDir = join(folder, 'node_modules', '@hearth-bridge', 'hearth');
    mkdirSync(join(folder, 'node_modules', '.bin'), { recursive: true });
    mkdirSync(join(folder, 'node_modules', '@hearth-bridge'));
    writeFileSync(join(folder, 'package.json'), JSON.stringify({ name: 'my-home', private: true, dependencies: { '@hearth-bridge/hearth': '^0.1.0' } }));
    renameSync(unpacked, packageDir);
    // Its dependencies, as the checkout installed them (the package resolves them from its own folder first).
    symlinkSync(join(ROOT, 'node_modules'), join(packageDir, 'node_modules'));
    // npm makes a package's bin executable when it installs it (a fresh checkout's tsc output is 0644).
    chmodSync(join(packageDir, 'dist', 'cli', 'main.js'), 0o755);
    symlinkSync('../@hearth-bridge/hearth/dist/cli/main.js', join(folder, 'node_modules', '.bin', 'hearth'));
    // npm install -g: the package under <prefix>/lib/node_modules, its bin in <prefix>/bin.
    prefix = join(dir, 'global');
    mkdirSync(join(prefix, 'lib', 'node_modules', '@hearth-bridge'), { recursive: true });
    mkdirSync(join(prefix, 'bin'));
    symlinkSync(packageDir, join(prefix, 'lib', 'node_modules', '@hearth-bridge', 'hearth'));
    symlinkSync('../lib/node_modules/@hearth-bridge/hearth/dist/cli/main.js', join(prefix, 'bin', 'hearth'));
  });

  it("in its folder: the banner's commands are `npx hearth …` and run there; no `npm link` inside node_modules", async () => {
    const db = join(dir, 'installed.db');
    const main = join(packageDir, 'dist', 'cli', 'main.js');
    const daemon = await startDaemon(['--broker-port', String(await freePort()), '--http-port', '0', '--db', db], { cwd: folder, script: main });
    try {
      const banner = daemon.stdout();
      const tryLine = /^ {2}try +(.*)$/m.exec(banner)?.[1] ?? '';
      assert.match(tryLine, /^npx hearth devices /, banner);
      // The commands the banner suggests (every `cmd` it prints is the same name): none is a path into node_modules.
      const suggested = banner.split('\n').filter((l) => /^ {2}(tools|http|control|try) |^ {12}\(/.test(l));
      assert.equal(suggested.length, 5, banner);
      for (const l of suggested) assert.doesNotMatch(l, /node_modules|npm link/, l);
      assert.match(banner, /a `hearth` command for any folder: `npm install -g @hearth-bridge\/hearth`/);
      const devices = shell(tryLine.split('  ·  ')[0], folder);
      assert.equal(devices.code, 0, devices.out);
      assert.match(devices.out, /living_room_lamp\.lamp/);
    } finally {
      await daemon.stop();
    }
    // A hint from any command: a bad argument's example.
    const bad = await runGroup(['call', 'living_room_lamp', '{'], { cwd: folder, script: main });
    assert.match(bad.stderr, /example: npx hearth call living_room_lamp/);
  });

  it('installed globally: `hearth …`, which runs from any folder', async () => {
    const path = `${join(prefix, 'bin')}${delimiter}${PATH}`;
    const main = join(prefix, 'lib', 'node_modules', '@hearth-bridge', 'hearth', 'dist', 'cli', 'main.js');
    const bad = await runGroup(['call', 'living_room_lamp', '{'], { cwd: dir, script: main, env: { PATH: path } });
    const example = /example: (hearth call living_room_lamp '\{"action":"turn_on"\}')/.exec(bad.stderr)?.[1];
    assert.ok(example, bad.stderr);
    const r = shell('hearth --version', dir, path);
    assert.equal(r.code, 0, r.out);
  });
});
