// Options that take a value and may be given more than once (--set, --devices, --role) leave the
// positional arguments after them alone, and a bad value stops the command naming the option.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { runHearth } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-options-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const deviceFile = (id: string, name: string) => `devices:
  - id: ${id}
    name: ${name}
    entities:
      lamp:
        kind: switch
        name: ${name} lamp
        state_topic: ${id}/lamp
        command_topic: ${id}/lamp/set
`;

describe('repeatable options', () => {
  let broker: TestBroker;
  const desk = join(dir, 'desk.yaml');
  const hall = join(dir, 'hall.yaml');
  // No daemon runs for this database: every command runs on its own.
  const home = () => ['--no-demo', '--db', join(dir, 'h.db'), '--mqtt-url', broker.url];

  before(async () => {
    writeFileSync(desk, deviceFile('desk', 'Desk'));
    writeFileSync(hall, deviceFile('hall', 'Hall'));
    broker = await startAedes();
  });
  after(async () => {
    await broker?.stop();
  });

  it('`--devices a --devices b` reads both files', async () => {
    const { code, stdout, stderr } = await runHearth(['tools', '--devices', desk, '--devices', hall, ...home()], { cwd: dir });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^desk_lamp +actuator/m);
    assert.match(stdout, /^hall_lamp +actuator/m);
  });

  it('`hearth call --set a=b <tool> <args>`: the tool and args after --set and --devices stay positional', async () => {
    const { code, stdout, stderr } = await runHearth(
      ['call', '--set', 'tools.shape=per-entity', '--devices', desk, '--devices', hall, 'hall_lamp', '{"action":"explode"}', ...home()],
      { cwd: dir },
    );
    assert.doesNotMatch(stderr, /missing required argument/);
    // The call reached the tool of the second file with the arguments given: they fail its schema, by name.
    assert.match(stderr, /invalid arguments: "action" must be one of "turn_on", "turn_off"/);
    assert.equal(stdout, '');
    assert.equal(code, 2, stderr);
  });

  it('`--role a --role b` after which the tool still follows', async () => {
    const { code, stdout, stderr } = await runHearth(
      ['call', '--role', 'guest', '--role', 'child', '--devices', desk, 'desk_lamp', '{"action":"explode"}', ...home()],
      { cwd: dir },
    );
    assert.doesNotMatch(stderr, /missing required argument/);
    assert.match(stderr, /invalid arguments/);
    assert.equal(stdout, '');
    assert.equal(code, 2, stderr);
  });

  it('a bad --set value stops with the setting named and exit code 2, before anything runs', async () => {
    const shape = await runHearth(['call', '--set', 'tools.shape=sideways', 'desk_lamp', ...home()], { cwd: dir });
    assert.equal(shape.code, 2);
    assert.match(shape.stderr, /^hearth: configuration error: command line: tools\.shape: must be one of "auto", "per-entity", "grouped" \(got "sideways"\)$/m);
    assert.equal(shape.stdout, '');
    const noEquals = await runHearth(['call', '--set', 'tools.shape', 'desk_lamp', ...home()], { cwd: dir });
    assert.equal(noEquals.code, 2);
    assert.match(noEquals.stderr, /--set tools\.shape: must look like key\.path=value/);
    const unknown = await runHearth(['tools', '--set', 'a=b', ...home()], { cwd: dir });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /command line: a: is not a known setting/);
  });

  it("bad arguments of a command exit 2 naming them; a missing one is commander's exit 1", async () => {
    const notJson = await runHearth(['call', '--devices', desk, 'desk_lamp', '{action', ...home()], { cwd: dir });
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /^hearth: the arguments are not JSON/);
    const only = await runHearth(['simulate', '--only', 'desk', '--only', 'toaster', '--devices', desk, ...home()], { cwd: dir });
    assert.equal(only.code, 2);
    assert.match(only.stderr, /--only: no such device to simulate: toaster \(known: desk\)/);
    const missing = await runHearth(['call', '--set', 'tools.shape=grouped', ...home()], { cwd: dir });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /missing required argument 'tool'/);
  });

  it('HEARTH_CONFIG names the config file, and --config wins over it', async () => {
    const fromEnv = await runHearth(['tools', ...home()], { cwd: dir, env: { HEARTH_CONFIG: join(dir, 'absent.yaml') } });
    assert.equal(fromEnv.code, 2);
    assert.match(fromEnv.stderr, /configuration error: .*absent\.yaml: \(file\): does not exist/);
    const config = join(dir, 'hearth.yaml');
    writeFileSync(config, `devices:\n  paths: [${hall}]\n`);
    const flag = await runHearth(['tools', '--config', config, ...home()], { cwd: dir, env: { HEARTH_CONFIG: join(dir, 'absent.yaml') } });
    assert.equal(flag.code, 0, flag.stderr);
    assert.match(flag.stdout, /^hall_lamp +actuator/m);
  });
});

describe('a command group without its subcommand', () => {
  const db = join(dir, 'groups.db');
  it('`hearth policy|audit|token|memory` with options alone run their listing (list, tail), not a usage error', async () => {
    for (const [group, heading] of [
      ['policy', /\d+ rules\. Among the rules that match/],
      ['audit', /no audit rows|TIME +ID +PRINCIPAL/],
      ['token', /no tokens|NAME +PRINCIPAL/],
      ['memory', /nothing remembered|ID +WHEN/],
    ] as const) {
      const r = await runHearth([group, '--db', db, '--no-demo', '--standalone'], { cwd: dir });
      assert.equal(r.code, 0, `${group}: ${r.stderr}`);
      assert.match(r.stdout, heading, group);
      assert.doesNotMatch(r.stderr, /unknown option/);
    }
  });
});
