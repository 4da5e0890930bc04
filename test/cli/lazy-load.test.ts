// A command loads only what it needs: `--version` nothing of the app; `devices`
// and `approve` no MCP SDK, no sharp, no Node-RED helpers, no agent engine,
// no embedded broker (which is what makes them start fast).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { runGroup } from '../helpers/daemon.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-lazy-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const HOOK = fileURLToPath(new URL('../helpers/module-log.mjs', import.meta.url));
const HEAVY = [/@modelcontextprotocol/, /\/sharp\//, /node-red/, /\/dist\/agent\//, /\/aedes\//, /\/dist\/mcp\//, /\/dist\/http\//];

let runs = 0;
async function loaded(args: string[]): Promise<{ code: number | null; modules: string[]; stderr: string }> {
  const log = join(dir, `modules-${++runs}.txt`);
  const r = await runGroup(args, { cwd: dir, nodeArgs: ['--import', HOOK], env: { HEARTH_MODULE_LOG: log } });
  let modules: string[] = [];
  try {
    modules = [...new Set(readFileSync(log, 'utf8').split('\n').filter(Boolean))];
  } catch {
    // nothing resolved at all
  }
  return { code: r.code, modules, stderr: r.stderr };
}

describe('what a command loads', () => {
  let broker: TestBroker;
  before(async () => {
    broker = await startAedes();
  });
  after(async () => {
    await broker?.stop();
  });

  it('`hearth --version` loads no module of the app or its dependencies', async () => {
    const r = await loaded(['--version']);
    assert.equal(r.code, 0, r.stderr);
    const ours = r.modules.filter((m) => !m.startsWith('node:') && !m.endsWith('/cli/main.js'));
    assert.deepEqual(ours, []);
  });

  for (const args of [['devices', '--no-demo', '--wait', '100'], ['approve', 'abcdef123456'], ['approvals']]) {
    it(`\`hearth ${args[0]}\` on its own loads no MCP SDK, sharp, Node-RED helpers, agent engine or embedded broker`, async () => {
      const r = await loaded([...args, '--mqtt-url', broker.url, '--db', join(dir, 'h.db')]);
      assert.ok(
        r.modules.some((m) => m.includes('/dist/cli/')),
        'the log saw the command',
      );
      for (const heavy of HEAVY)
        assert.deepEqual(
          r.modules.filter((m) => heavy.test(m)),
          [],
          `${args[0]} loaded ${heavy}`,
        );
    });
  }
});
