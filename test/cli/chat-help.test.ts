// `hearth chat`'s `help` shows examples made of the home in use, as the "not understood" answer offers them: the
// demo home's (`hearth start` on its embedded broker) name its devices, a lock among them; the third Zigbee2MQTT
// fixture home's (test/fixtures/homes/zigbee2mqtt-third-home.json on mosquitto) name its own, and it has no lock, so
// no lock question. The real CLI against the real daemon.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runHearth } from '../helpers/cli.js';
import { HOMES, type Z2mHomeFixture } from '../helpers/simulated-zigbee2mqtt.js';
import { useHearthStart } from '../helpers/use-hearth-start.js';
import { useZigbee2mqttDaemon } from '../helpers/zigbee2mqtt-daemon.js';

const THIRD = JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-third-home.json'), 'utf8')) as Z2mHomeFixture;

/** The example lines `help` printed: those between its first line and the line about actions. */
function helpExamples(stdout: string): string[] {
  const lines = stdout.split('\n');
  const start = lines.findIndex((l) => l.startsWith('Say what you want in your own words'));
  const end = lines.findIndex((l, i) => i > start && l.startsWith('An action a rule holds'));
  assert.ok(start >= 0 && end > start, `no help in:\n${stdout}`);
  return lines.slice(start + 1, end).map((l) => l.trim());
}

const help = async (args: string[], cwd: string) => {
  const r = await runHearth(['chat', ...args], { cwd, stdin: 'help\n/quit\n' });
  assert.equal(r.code, 0, r.stderr);
  return helpExamples(r.stdout);
};

describe('`hearth chat` help on the demo home', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-chat-help-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const started = useHearthStart(dir);

  it("names the demo home's own devices, its front door lock among them", async () => {
    const examples = await help(['--db', started.db, '--broker-port', String(started.brokerPort)], dir);
    assert.ok(examples.length >= 2, examples.join(' | '));
    assert.ok(
      examples.some((e) => /^turn on the (garage door|hallway motion|kitchen light|living room lamp|siren)/.test(e)),
      examples.join(' | '),
    );
    assert.ok(
      examples.some((e) => /^is the front door (lock )?locked\?$/.test(e)),
      examples.join(' | '),
    );
    // Every one names something of this home (the fixed help asked about a bedroom the demo home does not have).
    const demo = /kitchen light|living room|front door|thermostat|garage door|hallway|entrance|siren|robot vacuum|kitchen/;
    assert.deepEqual(
      examples.filter((e) => !demo.test(e)),
      [],
    );
  });
});

describe('`hearth chat` help on a Zigbee2MQTT home without a lock', () => {
  const home = useZigbee2mqttDaemon('chat-help', THIRD);

  it("names this home's areas, devices once owners may act, and asks nothing about a lock it does not have", async () => {
    // Before any rule lets owners act (docs/your-home.md, step 4): what may be asked, of this home's areas.
    const reads = await help(home.common(), home.dir);
    assert.ok(reads.length >= 1, reads.join(' | '));
    assert.ok(
      reads.every((e) => /^what is (the temperature|on) in the (bathroom|office|kitchen|hallway|bedroom|garage|living room)\?$/.test(e)),
      reads.join(' | '),
    );
    const allowed = await runHearth(['policy', 'allow', 'role:owner', '--capability', 'actuator', '--action', 'actuate', ...home.common()], { cwd: home.dir });
    assert.equal(allowed.code, 0, allowed.stderr);
    const examples = await help(home.common(), home.dir);
    const devices = ['hue color lamp', 'pendant', 'desk fan', 'kettle', 'electric blanket', 'roller shade', 'curtain motor'];
    assert.ok(
      examples.some((e) => /^(turn on|open) the /.test(e) && devices.some((d) => e.includes(d))),
      examples.join(' | '),
    );
    // Nothing of the demo home, no lock, no placeholder.
    assert.deepEqual(
      [...reads, ...examples].filter((e) => /lock|kitchen light|living room lamp|garage door|thermostat|<device>|<room>/i.test(e)),
      [],
    );
  });
});
