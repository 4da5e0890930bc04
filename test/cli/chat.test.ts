// `hearth chat` against `hearth start` on the demo home, with the offline model and no network.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';
import { startOpenAIServer, textChunks, toolCallChunks } from '../helpers/openai-server.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-chat-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function chat(args: string[], input: string, timeoutMs = 30_000) {
  const p = spawnHearth(['chat', ...args], { cwd: dir, stdin: input });
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

describe('hearth chat', () => {
  let port: number;
  let bridge: Spawned;
  const common = () => ['--broker-port', String(port), '--db', join(dir, 'h.db')];

  before(async () => {
    port = await freePort();
    bridge = spawnHearth(['start', ...common(), '--set', 'http.port=0'], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    await bridge?.stop();
  });

  it('"turn on the living room lamp" switches the demo lamp, shows the call, and leaves an audit row', async () => {
    const { code, stdout, stderr } = await chat(common(), 'turn on the living room lamp\nis the front door locked?\n');
    assert.equal(code, 0, stderr);
    assert.match(stdout, /Hearth chat as cli:\S+ with the offline intent model/);
    assert.match(stdout, /→ living_room_lamp \{"action":"turn_on"\}/);
    assert.match(stdout, /← confirmed: "Living room lamp"/);
    assert.match(stdout, /Done: the living room lamp is on\./);
    assert.match(stdout, /Yes, the front door lock is locked\./);
    const devices = await runHearth(['devices', '--json', '--broker-port', String(port)], { cwd: dir });
    const lamp = (JSON.parse(devices.stdout) as Array<{ entities: Array<{ id: string; value: unknown }> }>)
      .flatMap((d) => d.entities)
      .find((e) => e.id === 'living_room_lamp.lamp');
    assert.equal(lamp?.value, 'on');
    const tail = await runHearth(['audit', 'tail', '--json', '--db', join(dir, 'h.db')], { cwd: dir });
    const rows = JSON.parse(tail.stdout) as Array<{ tool: string; action: string; outcome: string; session: string | null }>;
    const row = rows.find((r) => r.tool === 'living_room_lamp' && r.action === 'turn_on');
    assert.equal(row?.outcome, 'confirmed');
    assert.ok(row?.session, 'the row names the chat session');
  });

  it('asks inline before an action a confirm rule holds; "n" leaves the garage shut', async () => {
    const { stdout } = await chat(common(), 'open the garage\nn\n');
    assert.match(stdout, /\? garage_door \{"action":"open"\} needs your approval \(rule #\d+/);
    assert.match(stdout, /← failed: not done: the person denied permission/);
    const devices = await runHearth(['devices', '--json', '--broker-port', String(port)], { cwd: dir });
    const garage = (JSON.parse(devices.stdout) as Array<{ entities: Array<{ id: string; value: unknown }> }>)
      .flatMap((d) => d.entities)
      .find((e) => e.id === 'garage_door.door');
    assert.equal(garage?.value, 'closed');
    // The refused attempt is in the audit, as denied by the person asked, with the chat's session.
    const audit = await runHearth(['audit', 'tail', '-n', '1', '--json', ...common()], { cwd: dir });
    const [row] = JSON.parse(audit.stdout) as Array<{ tool: string; action: string; outcome: string; reason: string; error: string; session: string | null }>;
    assert.deepEqual([row!.tool, row!.action, row!.outcome], ['garage_door', 'open', 'denied']);
    assert.match(row!.reason, /a person denied permission for this action when asked/);
    assert.ok(row!.session, 'names the chat session');
  });

  it('help and /help say how to talk to it; an approval question takes only an answer, and the next line typed is said next (#42)', async () => {
    const help = await chat(common(), 'help\n/help\nis the front door locked?\n');
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stdout.match(/Say what you want in your own words/g)?.length, 2);
    assert.match(help.stdout, /y \(yes, once\), a \(always, for that tool\), n or Enter \(no\)/);
    assert.match(help.stdout, /Yes, the front door lock is locked\./);
    assert.doesNotMatch(help.stdout, /did not understand/);
    // Typed ahead while the garage waits for approval: that line is not the answer, and is not lost.
    const ahead = await chat(common(), 'open the garage\nis the front door locked?\n');
    assert.match(ahead.stdout, /\? garage_door \{"action":"open"\} needs your approval/);
    assert.match(ahead.stdout, /not a yes: denied; "is the front door locked\?" comes next/);
    assert.match(ahead.stdout, /← failed: not done: the person denied permission/);
    assert.match(ahead.stdout, /Yes, the front door lock is locked\./);
    const devices = await runHearth(['devices', '--json', '--broker-port', String(port)], { cwd: dir });
    const garage = (JSON.parse(devices.stdout) as Array<{ entities: Array<{ id: string; value: unknown }> }>)
      .flatMap((d) => d.entities)
      .find((e) => e.id === 'garage_door.door');
    assert.notEqual(garage?.value, 'open');
  });

  it('"turn off all the lights" is one grouped call an owner makes without being asked; a member a confirm rule holds makes it ask', async () => {
    const off = await chat(common(), 'turn off all the lights\n');
    assert.match(off.stdout, /→ control_group \{"action":"turn_off"/);
    assert.doesNotMatch(off.stdout, /needs your approval/);
    assert.match(off.stdout, /← confirmed: /);
    const added = await runHearth(
      ['policy', 'confirm', 'role:owner', '--entity', 'kitchen_light.light', '--action', 'turn_on', '--priority', '5', '--json', ...common()],
      {
        cwd: dir,
      },
    );
    assert.equal(added.code, 0, added.stderr);
    const rule = JSON.parse(added.stdout) as { id: number };
    try {
      const on = await chat(common(), 'turn on all the lights\nn\n');
      assert.match(on.stdout, /\? control_group \{"action":"turn_on".*\} needs your approval \(rule #\d+/);
      assert.match(on.stdout, /← failed: not done: the person denied permission/);
    } finally {
      await runHearth(['policy', 'remove', String(rule.id), ...common()], { cwd: dir });
    }
  });

  it('says clearly when it did not understand', async () => {
    const { stdout } = await chat(common(), 'bake me a cake\n');
    assert.match(stdout, /Sorry, I did not understand that\. You can say things like "/);
    assert.ok(!/→/.test(stdout), 'no tool was called');
  });

  it('a guest is told the policy says no', async () => {
    const { stdout } = await chat([...common(), '--as', 'chat:guest'], 'turn on the living room lamp\n');
    // Tools a guest may never use are not even offered; with no rule for guests the lamp is denied by default.
    assert.match(stdout, /not allowed|cannot do that here/i);
  });

  it('with agent.provider=openai it uses the model at that URL', async () => {
    const server = await startOpenAIServer({
      script: [toolCallChunks([{ name: 'host__living_room_lamp', arguments: { action: 'turn_off' } }]), textChunks('The lamp is off now.')],
    });
    try {
      const { stdout, stderr } = await chat(
        [
          ...common(),
          '--set',
          'agent.provider=openai',
          '--set',
          `agent.baseUrl=${server.url}`,
          '--set',
          'agent.model=test-model',
          '--set',
          'agent.apiKey=sk-local',
        ],
        'switch the lamp off please\n',
      );
      assert.match(stdout, /with test-model at http:\/\/127\.0\.0\.1/, stderr);
      assert.match(stdout, /→ living_room_lamp \{"action":"turn_off"\}/);
      assert.match(stdout, /← confirmed/);
      assert.match(stdout, /The lamp is off now\./);
      assert.equal(server.requests[0].body.model, 'test-model');
      assert.equal(server.requests[0].headers.authorization, 'Bearer sk-local');
      assert.match(server.requests[0].body.messages[0].content, /The home has these areas and kinds of device:\n- "Entrance": cameras, locks/);
    } finally {
      await server.close();
    }
  });
});
