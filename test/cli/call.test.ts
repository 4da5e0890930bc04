// `hearth tools` and `hearth call` as a user runs them against `hearth start`: what a call did goes to stdout with
// exit 0; anything else to stderr with its own exit code (docs/tools.md), so a script can tell them apart.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-call-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('hearth tools and hearth call on the demo home', () => {
  let port: number;
  let bridge: Spawned;
  let sim: Spawned;
  const common = () => ['--broker-port', String(port), '--db', join(dir, 'h.db')];
  // Beside the demo home: a porch light no rule allows and nothing answers for (a quick confirm timeout).
  const porch = join(dir, 'porch.yaml');
  writeFileSync(
    porch,
    `devices:
  - id: porch
    name: Porch
    entities:
      light:
        kind: switch
        name: Porch light
        state_topic: porch/light
        command_topic: porch/light/set
        confirm_timeout_ms: 300
`,
  );

  before(async () => {
    port = await freePort();
    bridge = spawnHearth(['start', '--no-simulator', ...common(), '--devices', porch, '--set', 'http.port=0'], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
    sim = spawnHearth(['simulate', '--broker-port', String(port)], { cwd: dir });
    await sim.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    await sim?.stop('SIGKILL');
    await bridge?.stop();
  });

  it('`hearth tools --json` lists valid OpenAI function specs with the host__ prefix', async () => {
    const { code, stdout, stderr } = await runHearth(['tools', '--json', ...common()], { cwd: dir });
    assert.equal(code, 0, stderr);
    // The daemon's answer: each tool with its spec exactly as a model receives it.
    const answer = JSON.parse(stdout) as { tools: Array<{ spec: { type: string; function: { name: string; description: string; parameters: object } } }> };
    const specs = answer.tools.map((t) => t.spec);
    assert.ok(specs.length >= 10);
    const ajv = new Ajv({ strict: true });
    for (const s of specs) {
      assert.equal(s.type, 'function');
      assert.match(s.function.name, /^host__[A-Za-z0-9_-]{1,58}$/);
      assert.ok(!s.function.name.slice(6).includes('__'));
      assert.ok(s.function.description.length > 40);
      ajv.compile(s.function.parameters); // every schema compiles in strict mode
    }
    assert.ok(specs.some((s) => s.function.name === 'host__living_room_lamp'));
    const table = await runHearth(['tools', ...common()], { cwd: dir });
    assert.match(table.stdout, /living_room_lamp +actuator +Control the switch "Living room lamp" in area "Living room"/);
    const stats = await runHearth(['tools', '--stats', ...common()], { cwd: dir });
    // The demo's 17 and the porch light's.
    assert.match(stats.stdout, /per-entity +18 tools +~\d+ tokens/);
    assert.match(stats.stdout, /grouped +\d+ tools +~\d+ tokens/);
  });

  it('`hearth call` turns the lamp on and reports confirmed, on stdout with exit 0', async () => {
    const { code, stdout, stderr } = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', ...common()], { cwd: dir });
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
    assert.match(stdout, /^confirmed: "Living room lamp" \(living_room_lamp\.lamp, area "Living room"\): on; .* \(reported \d+ ms after the command\)\n$/);
    const json = await runHearth(['call', 'living_room_lamp', '{"action":"turn_off"}', '--json', ...common()], { cwd: dir });
    assert.equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout) as {
      status: string;
      text: string;
      details: { auditId: number; published: Array<{ topic: string; payload: string }> };
    };
    assert.equal(result.status, 'done');
    assert.match(result.text, /^confirmed/);
    assert.deepEqual(result.details.published, [{ topic: 'hearth-demo/living_room_lamp/set', payload: 'OFF' }]);
    assert.ok(result.details.auditId > 0);
  });

  it('saves a camera frame with --image-out', async () => {
    const out = join(dir, 'door.jpg');
    const { code, stdout } = await runHearth(['call', 'front_door_camera', '--image-out', out, ...common()], { cwd: dir });
    assert.equal(code, 0);
    assert.match(stdout, /\[image image\/jpeg, \d+ KiB saved to .*door\.jpg\]/);
    assert.deepEqual([...readFileSync(out).subarray(0, 3)], [0xff, 0xd8, 0xff]);
  });

  it('says what was wrong with bad input, on stderr, with exit codes of its own', async () => {
    const notJson = await runHearth(['call', 'living_room_lamp', '{action:on}', ...common()], { cwd: dir });
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /the arguments are not JSON/);
    const noTool = await runHearth(['call', 'toaster', '{}', ...common()], { cwd: dir });
    assert.equal(noTool.code, 8, noTool.stderr);
    assert.equal(noTool.stdout, '');
    assert.match(noTool.stderr, /no tool "toaster"; known: .*living_room_lamp/);
    const badArg = await runHearth(['call', 'kitchen_light', '{"action":"turn_on","brightness":-5}', ...common()], { cwd: dir });
    assert.equal(badArg.code, 2, badArg.stderr);
    assert.equal(badArg.stdout, '');
    // A flow's brightness on the light's own scale is held to that scale.
    assert.match(badArg.stderr, /^invalid arguments: "brightness" must be between 0 and 254 for this device \(got -5\)/);
    const badUnit = await runHearth(['call', 'kitchen_light', '{"action":"turn_on","brightness_pct":"2700K"}', ...common()], { cwd: dir });
    assert.equal(badUnit.code, 2, badUnit.stderr);
    assert.match(badUnit.stderr, /^invalid arguments: /);
    const badAs = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--as', 'root', ...common()], { cwd: dir });
    assert.equal(badAs.code, 2);
    assert.match(badAs.stderr, /--as "root": a principal looks like/);
  });

  it('a call the policy refuses: stderr, exit 4, and nothing sent', async () => {
    const r = await runHearth(['call', 'porch_light', '{"action":"turn_on"}', ...common()], { cwd: dir });
    assert.equal(r.code, 4, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^not allowed: rule #2 .*To allow it: .*policy allow role:owner --entity porch\.light --action turn_on/);
    // The same for a principal whose roles the demo's owner rule does not cover.
    const guest = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--as', 'chat:guest', '--role', 'guest', ...common()], { cwd: dir });
    assert.equal(guest.code, 4, guest.stderr);
    assert.match(guest.stderr, /^not allowed: /);
  });

  it('a call held for approval: stderr, exit 5, a runnable approve line; approved, the same call prints on stdout with 0', async () => {
    const held = await runHearth(['call', 'front_door_lock', '{"action":"unlock"}', ...common()], { cwd: dir });
    assert.equal(held.code, 5, held.stderr);
    assert.equal(held.stdout, '');
    const id = /`[^`]* approve ([0-9a-f]+)`/.exec(held.stderr)?.[1];
    assert.ok(id, held.stderr);
    const approved = await runHearth(['approve', id, ...common()], { cwd: dir });
    assert.equal(approved.code, 0, approved.stderr);
    const again = await runHearth(['call', 'front_door_lock', '{"action":"unlock"}', ...common()], { cwd: dir });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stderr, '');
    assert.match(again.stdout, /^confirmed: "Front door lock" .*: unlocked; /);
  });

  it('a call sent but not confirmed: stderr, exit 6; --json keeps the answer on stdout with its status', async () => {
    await runHearth(['policy', 'allow', 'role:owner', '--entity', 'porch.light', '--action', 'actuate', ...common()], { cwd: dir }).then((r) =>
      assert.equal(r.code, 0, r.stderr),
    );
    const r = await runHearth(['call', 'porch_light', '{"action":"turn_on"}', ...common()], { cwd: dir });
    assert.equal(r.code, 6, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^unconfirmed: sent turn on to "Porch light", but it did not report the new state within/);
    const json = await runHearth(['call', 'porch_light', '{"action":"turn_off"}', '--json', ...common()], { cwd: dir });
    assert.equal(json.code, 6, json.stderr);
    const answer = JSON.parse(json.stdout) as { status: string; outcome: string; isError: boolean; text: string; details: { auditId: number } };
    assert.equal(answer.status, 'unconfirmed');
    assert.equal(answer.outcome, 'unconfirmed');
    assert.match(answer.text, /^unconfirmed: /);
    assert.ok(answer.details.auditId > 0);
    // Refused and held answers are JSON on stdout too, each with its status and exit code.
    const refused = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--as', 'chat:guest', '--role', 'guest', '--json', ...common()], {
      cwd: dir,
    });
    assert.equal(refused.code, 4, refused.stderr);
    assert.deepEqual((({ status, outcome, isError }) => ({ status, outcome, isError }))(JSON.parse(refused.stdout) as Record<string, unknown>), {
      status: 'refused',
      outcome: 'denied',
      isError: true,
    });
    const held = await runHearth(['call', 'garage_door', '{"action":"open"}', '--json', ...common()], { cwd: dir });
    assert.equal(held.code, 5, held.stderr);
    const heldAnswer = JSON.parse(held.stdout) as { status: string; outcomeWord: string; details: { approvalId: string } };
    assert.equal(heldAnswer.status, 'held');
    assert.equal(heldAnswer.outcomeWord, 'held');
    assert.match(heldAnswer.details.approvalId, /^[0-9a-f]+$/);
  });

  it('reports a device that is not answering (offline) apart: stderr, exit 7', async () => {
    await sim.stop('SIGKILL');
    // The broker publishes each simulated device's last will (offline); retry until it has.
    let last = { code: null as number | null, stdout: '', stderr: '' };
    for (let i = 0; i < 20; i++) {
      last = await runHearth(['call', 'garage_door', '{"action":"close"}', ...common()], { cwd: dir });
      if (/offline/.test(last.stderr)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Not answering: nothing was sent (exit 7), unlike a call that was sent and not confirmed (6).
    assert.equal(last.code, 7, last.stderr);
    assert.equal(last.stdout, '');
    assert.match(last.stderr, /^failed: "Garage door" is offline \(its availability topic says so\); nothing was sent\.\n$/);
  });
});
