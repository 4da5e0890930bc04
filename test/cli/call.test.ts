// `hearth tools` and `hearth call` as a user runs them against `hearth start`.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

  before(async () => {
    port = await freePort();
    bridge = spawnHearth(['start', '--no-simulator', ...common(), '--set', 'http.port=0'], { cwd: dir });
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
    assert.match(stats.stdout, /per-entity +17 tools +~\d+ tokens/);
    assert.match(stats.stdout, /grouped +\d+ tools +~\d+ tokens/);
  });

  it('`hearth call` turns the lamp on and reports confirmed', async () => {
    const { code, stdout, stderr } = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', ...common()], { cwd: dir });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^confirmed: "Living room lamp" \(living_room_lamp\.lamp, area "Living room"\): on; .* \(reported \d+ ms after the command\)\n$/);
    const json = await runHearth(['call', 'living_room_lamp', '{"action":"turn_off"}', '--json', ...common()], { cwd: dir });
    const result = JSON.parse(json.stdout) as { text: string; details: { auditId: number; published: Array<{ topic: string; payload: string }> } };
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

  it('says what was wrong with bad input', async () => {
    const notJson = await runHearth(['call', 'living_room_lamp', '{action:on}', ...common()], { cwd: dir });
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /the arguments are not JSON/);
    const noTool = await runHearth(['call', 'toaster', '{}', ...common()], { cwd: dir });
    assert.equal(noTool.code, 2);
    assert.match(noTool.stderr, /no tool "toaster"; known: .*living_room_lamp/);
    const badArg = await runHearth(['call', 'kitchen_light', '{"action":"turn_on","brightness":-5}', ...common()], { cwd: dir });
    assert.equal(badArg.code, 1);
    // A flow's brightness on the light's own scale is held to that scale.
    assert.match(badArg.stdout, /invalid arguments: "brightness" must be between 0 and 254 for this device \(got -5\)/);
    const badAs = await runHearth(['call', 'living_room_lamp', '{"action":"turn_on"}', '--as', 'root', ...common()], { cwd: dir });
    assert.notEqual(badAs.code, 0);
    assert.match(badAs.stderr, /--as "root": a principal looks like/);
  });

  it('reports a clear failure when the garage simulator is gone', async () => {
    await sim.stop('SIGKILL');
    // The broker publishes each simulated device's last will (offline); retry until it has.
    let last = '';
    for (let i = 0; i < 20; i++) {
      const { stdout } = await runHearth(['call', 'garage_door', '{"action":"close"}', ...common()], { cwd: dir });
      last = stdout;
      if (/offline/.test(stdout)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.match(last, /^failed: "Garage door" is offline \(its availability topic says so\); nothing was sent\.\n$/);
  });
});
