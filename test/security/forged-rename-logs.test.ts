// A forged list renaming every device of a big home writes a few log lines, not one per entity. Anything from the
// broker is bounded in work per message and per second, log lines included: before, a forged bridge/devices
// renaming thousands of devices wrote a warning per moved entity (and an info line per renamed device), so one
// retained message could fill a disk. Now a list gives its first few a line each and one summary line with the
// count and the first few devices; the owner's left-out list (`/api/devices/refused`, the page, `hearth devices`)
// still shows every entity. The home: the fixture Zigbee2MQTT home's devices (zigbee-herdsman-converters models,
// named as owners name them: `Living room/Ceiling light`, `Kitchen spots`), numbered into a home of 1,600 devices,
// on a real broker (aedes), a real SQLite file and a real HTTP server.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { devicesText } from '../../src/cli/devices.js';
import { devices } from '../../src/daemon/methods/devices.js';
import { commandTopicsOf } from '../../src/devices/commands.js';
import type { Hearth } from '../../src/hearth.js';
import type { HttpServer } from '../../src/http/server.js';
import { refusedClaimsJson } from '../../src/present/refused-claim.js';
import { LINE_BUDGET } from '../../src/util/line-budget.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { request } from '../helpers/http-client.js';
import { serveWithOwnerAndGuest } from '../helpers/http-home.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const HOME: { devices: Array<{ friendly_name: string; ieee_address: string; type: string }> } = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', 'fixtures', 'homes', 'zigbee2mqtt-home.json'), 'utf8'),
);
const COPIES = 100;

/** The fixture home's devices `COPIES` times over, numbered as an owner numbers them, each with its own IEEE address. */
function bigHome(rename: (name: string) => string = (n) => n) {
  const [coordinator, ...rest] = HOME.devices;
  const list: unknown[] = [coordinator];
  for (let n = 1; n <= COPIES; n++) {
    for (const [i, d] of rest.entries()) {
      const ieee = `0x00aa${n.toString(16).padStart(4, '0')}${i.toString(16).padStart(8, '0')}`;
      // An untouched device's name is its IEEE address; the rest are numbered.
      const name = d.friendly_name === d.ieee_address ? ieee : `${d.friendly_name} ${n}`;
      list.push({ ...d, ieee_address: ieee, friendly_name: rename(name) });
    }
  }
  return list;
}

describe('security: a forged list renaming thousands of devices logs a bounded number of lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-forged-rename-logs-'));
  let broker: TestBroker;
  let hearth: Hearth | undefined;
  let server: HttpServer | undefined;
  const logs = logSink('debug');
  let zigbee: MqttClient;
  let owner = '';
  let commanded: string[] = [];

  before(async () => {
    broker = await startAedes();
    zigbee = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(bigHome()), { qos: 1, retain: true });
    hearth = await openHearth(broker.url, dir, logs.log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
    ({ server, owner } = await serveWithOwnerAndGuest(hearth, logs.log));
    await waitFor('the big home', () => hearth!.bridge.registry.devices().length === (HOME.devices.length - 1) * COPIES, 60_000);
    commanded = hearth.bridge.registry
      .entities()
      .filter((e) => commandTopicsOf(e).length)
      .map((e) => e.id);
  });
  after(async () => {
    await server?.close();
    await hearth?.close();
    await zigbee?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every entity waits for an owner and is listed; the log has a few lines and a summary naming the count', async () => {
    const h = hearth!;
    assert.ok(commanded.length > 1000, `${commanded.length} entities take commands`);
    const from = logs.lines.length;
    // The forger renames every device into the `Porch/` area.
    await zigbee.publishAsync('zigbee2mqtt/bridge/devices', JSON.stringify(bigHome((n) => `Porch/${n.split('/').pop()}`)), { qos: 1, retain: true });
    const movers = () => h.bridge.registry.refusedClaims().filter((r) => r.movedFrom);
    await waitFor('every device waiting on its move', () => movers().length === commanded.length, 60_000);
    const lines = logs.lines.slice(from);

    // The moves: a few lines of their own, and one summary with the count and the first devices.
    const moveLines = lines.filter((l) => l.refused !== undefined || l.refusedCount !== undefined);
    assert.ok(moveLines.length <= LINE_BUDGET.each, `${moveLines.length} lines about moves`);
    const [summary, ...more] = moveLines.filter((l) => l.refusedCount !== undefined);
    assert.equal(more.length, 0);
    const own = moveLines.filter((l) => l.refused !== undefined);
    assert.equal(own.length + (summary!.refusedCount as number), commanded.length, 'every move counted');
    assert.equal(summary!.movedCount, summary!.refusedCount);
    const count = summary!.refusedCount as number;
    assert.match(
      summary!.msg,
      new RegExp(
        `^${count} more entities of \\d+ devices are left out: ${count} moved by their source, each device waiting for an owner's \`hearth devices confirm-move <device>\` \\([^,]+(?:, [^,]+){4} and \\d+ more\\)\\.`,
      ),
    );
    assert.equal((summary!.devices as string[]).length, 5);
    // The renames: the same.
    const renames = lines.filter((l) => /^zigbee2mqtt: .*renamed/.test(l.msg));
    assert.ok(renames.length <= LINE_BUDGET.each, `${renames.length} lines about renames`);
    const renamed = renames.reduce((n, l) => n + (typeof l.renamedCount === 'number' ? l.renamedCount : 1), 0);
    assert.equal(renamed, (HOME.devices.length - 1) * COPIES);
    // Everything this list made Hearth write, at any level: bounded whatever the size of the list.
    assert.ok(
      lines.length <= 3 * LINE_BUDGET.each,
      `${lines.length} lines for a list of ${commanded.length} moved entities: ${lines.map((l) => String(l.msg).slice(0, 80)).join(' | ')}`,
    );

    // The owner still sees every one: the page's API and `hearth devices`.
    const seen = await request(`${server!.url}/api/devices/refused`, { token: owner });
    assert.equal(seen.status, 200, seen.text);
    const listed = new Set((seen.json as Array<{ entity: string; movedFrom?: string[] }>).filter((r) => r.movedFrom).map((r) => r.entity));
    assert.deepEqual([...listed].sort(), [...commanded].sort());
    const text = devicesText(devices(h.bridge), undefined, refusedClaimsJson(h.bridge));
    for (const id of commanded) assert.ok(text.includes(`(${id}): to `), `${id} is listed by \`hearth devices\``);
  });
});
