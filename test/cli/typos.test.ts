// Issue 30: a typo in a subcommand misled: `hearth policy alow ... --kind light` answered "unknown option
// '--kind'" for `policy list`; `token craete x` and `audit tial` answered "too many arguments for 'list'/'tail'".
// An unknown subcommand is one line naming it, with the nearest command, and exit 2; nothing runs.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runHearth } from '../helpers/cli.js';

describe('subcommand typos', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-typos-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [typed, meant] of [
    [['policy', 'alow', 'role:family', '--kind', 'light'], 'policy allow'],
    [['token', 'craete', 'x'], 'token create'],
    [['audit', 'tial'], 'audit tail'],
    [['memory', 'lsit'], 'memory list'],
  ] as const) {
    it(`hearth ${typed.join(' ')}: "did you mean '${meant}'", one line, exit 2, nothing opened`, async () => {
      const r = await runHearth([...typed], { cwd: dir });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, new RegExp(`^hearth: unknown command '${typed[0]} ${typed[1]}' \\(did you mean '${meant}'\\?\\)`));
      assert.equal(r.stderr.trim().split('\n').length, 1);
      assert.equal(existsSync(join(dir, 'hearth.db')), false, 'no database was made');
    });
  }

  it('a right subcommand still runs, and a default command keeps its own arguments', async () => {
    const r = await runHearth(['audit', 'show', '1', '--db', join(dir, 'none.db')], { cwd: dir });
    assert.match(r.stderr, /no database at/);
  });

  for (const [typed, usage] of [
    [['call'], 'hearth call [options] <tool> [args]'],
    [['policy', 'allow'], 'hearth policy allow [options] <subject>'],
    [['token', 'create'], 'hearth token create [options] <name>'],
    [['devices', '--colour', 'red'], 'hearth devices list [options]'],
  ] as const) {
    it(`hearth ${typed.join(' ')}: the mistake in one line, then the usage line, not the whole help`, async () => {
      const r = await runHearth([...typed], { cwd: dir });
      assert.notEqual(r.code, 0);
      const lines = r.stderr.trim().split('\n');
      assert.ok(lines.length <= 3, r.stderr);
      assert.match(lines[0], /missing required argument|unknown option/);
      assert.equal(lines[1], `usage: ${usage}`);
      assert.doesNotMatch(r.stderr, /Options:/);
      assert.equal(existsSync(join(dir, 'hearth.db')), false, 'no database was made');
    });
  }
});
