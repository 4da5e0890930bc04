// Issue 43: `hearth broker acl` as docs/deployment.md showed it failed ("needs a user of its own ... --user"), and
// with the shell redirect the page used it left an empty ACL file behind, which mosquitto then loaded: a broker
// with rules for no one. The command is run here as the page prints it (only the broker's address and the folder
// it writes to are this test's), through a shell, and the file it writes is loaded into a real mosquitto. A failing
// run writes nothing to stdout and leaves an earlier file as it was.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { HEARTH, ROOT } from '../helpers/cli.js';
import { spawnInGroup } from '../helpers/processes.js';

/** The `hearth broker acl` line of the mosquitto section, as printed (its trailing comment aside). */
function documentedCommand(): string {
  const page = readFileSync(join(ROOT, 'docs', 'deployment.md'), 'utf8');
  const line = /^hearth broker acl .*$/m.exec(page)?.[0];
  assert.ok(line, 'docs/deployment.md shows `hearth broker acl`');
  return line.replace(/\s+#.*$/, '');
}

/** Runs a shell command line with `hearth` on PATH as the built CLI; resolves with its exit code and output. */
function shell(line: string, cwd: string, bin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnInGroup('/bin/sh', ['-c', line], { cwd, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('security: `hearth broker acl` runs as the deployment page prints it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-doc-acl-'));
  const bin = join(dir, 'bin');
  let broker: TestBroker | undefined;
  let guarded: TestBroker | undefined;

  before(async () => {
    // `hearth` as an installed package provides it: the built CLI.
    mkdirSync(bin);
    writeFileSync(join(bin, 'hearth'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(HEARTH)} "$@"\n`);
    chmodSync(join(bin, 'hearth'), 0o755);
    broker = await startMosquitto();
  });
  after(async () => {
    await guarded?.stop();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The documented line with this test's broker and folder in place of the page's. */
  const asRun = (line: string) => line.replaceAll('mqtt://127.0.0.1:1883', broker!.url).replaceAll('/etc/mosquitto/', `${dir}/`);

  it('writes the ACL file the page names, which mosquitto loads; nothing on stdout', async () => {
    const line = documentedCommand();
    const r = await shell(asRun(line), dir, bin);
    assert.equal(r.code, 0, `${line}\n${r.stderr}`);
    const target = /(\S+hearth\.acl)\b/.exec(asRun(line))?.[1];
    assert.ok(target && existsSync(target), `the command wrote ${target}`);
    const acl = readFileSync(target, 'utf8');
    assert.match(acl, /^user hearth$/m, acl);
    assert.match(acl, /^topic readwrite #$/m);
    guarded = await startMosquitto({ config: [`acl_file ${target}`] });
  });

  it('a failing run (no user for Hearth) writes nothing to stdout, says why on stderr and leaves the earlier file whole', async () => {
    const line = asRun(documentedCommand()).replace(/\s--user\s+\S+/, '');
    const target = /(\S+hearth\.acl)\b/.exec(line)![1];
    const before = readFileSync(target, 'utf8');
    const r = await shell(line, dir, bin);
    assert.notEqual(r.code, 0);
    assert.equal(r.stdout, '', 'nothing on stdout');
    assert.match(r.stderr, /--user/);
    assert.equal(readFileSync(target, 'utf8'), before, 'the ACL file is as it was');
  });

  it('other failing runs of the command write nothing to stdout either', async () => {
    for (const args of ['--format xml', '', `--mqtt-url ${broker!.url} --user hearth --output ${dir}/no/such/../../hearth.acl --format yaml`]) {
      const r = await shell(`hearth broker acl ${args}`, dir, bin);
      assert.notEqual(r.code, 0, args);
      assert.equal(r.stdout, '', `${args}: nothing on stdout`);
      assert.match(r.stderr, /^hearth: /m, `${args}: says why`);
    }
  });
});
