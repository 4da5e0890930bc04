// A running `hearth start` for the Node-RED tests of the bridge's daemon mode: its own folder and database, a token
// for Node-RED (principal http:node-red, an owner), started before the file's tests and stopped after them; the
// CLI on the same database, as the person at the machine runs it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runHearth, startHearthDaemon, type Spawned } from '../helpers/cli.js';
import { started } from '../helpers/use-home.js';

export interface DaemonForNodes {
  dir: string;
  dbPath: string;
  /** `hearth <args> --db <dbPath>`, which must exit 0: its stdout. */
  cli(args: string[]): Promise<string>;
  /** The daemon's HTTP API. */
  httpUrl: string;
  /** Node-RED's token (http:node-red, an owner). */
  token: string;
}

/** `prepare` runs on the database before the daemon starts (more tokens, rules), given the CLI. */
export function useDaemonForNodes(name: string, prepare: (cli: DaemonForNodes['cli']) => Promise<void> = async () => undefined): DaemonForNodes {
  const dir = mkdtempSync(join(tmpdir(), `hearth-${name}-`));
  const dbPath = join(dir, 'hearth.db');
  let hearth: Spawned | undefined;
  let httpUrl: string | undefined;
  let token: string | undefined;
  const cli = async (args: string[]) => {
    const r = await runHearth([...args, '--db', dbPath], { cwd: dir });
    assert.equal(r.code, 0, `hearth ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  before(async () => {
    token = JSON.parse(await cli(['token', 'create', 'node-red', '--principal', 'http:node-red', '--role', 'owner', '--json'])).secret;
    await prepare(cli);
    ({ hearth, httpUrl } = await startHearthDaemon(dbPath, await freePort(), dir));
  });
  after(async () => {
    if (hearth && hearth.child.exitCode !== null) process.stderr.write(`hearth start exited early:\n${hearth.stderr().slice(-3000)}\n`);
    await hearth?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    dbPath,
    cli,
    get httpUrl() {
      return started(httpUrl, "the daemon's HTTP API");
    },
    get token() {
      return started(token, "Node-RED's token");
    },
  };
}
