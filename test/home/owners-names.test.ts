/// <reference lib="dom" />
// A Zigbee2MQTT home's names as their owners read them, the same words on every surface: `hearth start` on
// test/fixtures/homes/zigbee2mqtt-third-home.json (a snake_case `office/desk_fan` beside `Office/Thermometer`,
// `Living Room/Hue Color Lamp` written with spaces and capitals), published by the simulated Zigbee2MQTT on
// mosquitto; the real CLI (`hearth devices`, `hearth chat`), the HTTP API and the page in headless Chromium ask it.
// A device's id stays made from its whole friendly name (rules, approvals and the audit name it).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { BrowserContext } from 'playwright-core';
import { runHearth } from '../helpers/cli.js';
import { CHROMIUM, DESKTOP, openSignedIn, PAGE_ARTIFACTS } from '../helpers/page-browser.js';
import { HOMES, type Z2mHomeFixture } from '../helpers/simulated-zigbee2mqtt.js';
import { useZigbee2mqttDaemon } from '../helpers/zigbee2mqtt-daemon.js';
import type { HomeDeviceJson } from '../helpers/zigbee2mqtt-home.js';

const THIRD = JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-third-home.json'), 'utf8')) as Z2mHomeFixture;
/** `office/desk_fan` (a plug with a fan on it) and `Living Room/Hue Color Lamp`, by their ids. */
const FAN = 'office_desk_fan';
const LAMP = 'living_room_hue_color_lamp';
/** Text with the fan's entity ids taken out (an id keeps its underscores; a name never shows them). */
const withoutIds = (text: string) => text.replace(/\boffice_desk_fan\.\w+/g, '<id>');

describe('a Zigbee2MQTT home named as owners name things: the table, the API, the page and chat say the same words', () => {
  const home = useZigbee2mqttDaemon('owners-names', THIRD);
  const contexts: BrowserContext[] = [];
  home.cleanup(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
  });
  const cli = (args: string[], stdin?: string) => runHearth([...args, ...home.common()], { cwd: home.dir, stdin });
  const api = async (path: string) => {
    const res = await fetch(`${home.base}${path}`, { headers: { authorization: `Bearer ${home.owner}` }, signal: AbortSignal.timeout(15_000) });
    assert.equal(res.status, 200, path);
    return res.json() as Promise<any>;
  };

  before(() => {
    assert.ok(CHROMIUM, 'Chromium is not installed (chromium-headless-shell or chromium, or HEARTH_CHROMIUM)');
    mkdirSync(PAGE_ARTIFACTS, { recursive: true });
  });

  it('`hearth devices` shows `office/desk_fan` as "Desk fan" in the Office and `Living Room/Hue Color Lamp` as written; ids stay', async () => {
    const r = await cli(['devices']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    const row = (entity: string) => lines.find((l) => l.trimEnd().split(/\s+/).includes(entity)) ?? assert.fail(`no row for ${entity}:\n${r.stdout}`);
    assert.match(row(`${FAN}.switch`), /^Desk fan\s+Office\s+switch\s/);
    assert.match(row(`${FAN}.power`), /^Desk fan Power\s+Office\s+sensor\s/);
    assert.match(row(`${LAMP}.light`), /^Hue Color Lamp\s+Living Room\s+light\s/);
    // The owner's raw spelling is nowhere in a NAME: only the ids (the ENTITY column) keep their underscores.
    assert.deepEqual(
      lines.filter((l) => /^desk_fan|^office\/desk_fan/i.test(l)),
      [],
    );
    const json = JSON.parse((await cli(['devices', 'list', '--json'])).stdout) as HomeDeviceJson[];
    const fan = json.find((d) => d.id === FAN) ?? assert.fail(json.map((d) => d.id).join(', '));
    assert.equal(fan.name, 'Desk fan');
    assert.equal(fan.area, 'Office');
    assert.ok(
      fan.entities.every((e) => e.name.startsWith('Desk fan') && e.id.startsWith(`${FAN}.`)),
      fan.entities.map((e) => `${e.id} ${e.name}`).join(', '),
    );
    // The owner's spelling still finds it.
    const placed = await cli(['devices', 'area', 'desk_fan', 'Office']);
    assert.equal(placed.code, 0, placed.stderr);
  });

  it('GET /api/devices and /api/home/devices name the device "Desk fan" under its id office_desk_fan', async () => {
    const entities = (await api('/api/devices')) as Array<{ id: string; name: string; device: string }>;
    const fan = entities.filter((e) => e.device === FAN);
    assert.ok(fan.length >= 2, entities.map((e) => e.id).join(', '));
    assert.equal(fan.find((e) => e.id === `${FAN}.switch`)?.name, 'Desk fan');
    assert.ok(
      fan.every((e) => e.name.startsWith('Desk fan')),
      fan.map((e) => e.name).join(', '),
    );
    assert.equal(entities.find((e) => e.id === `${LAMP}.light`)?.name, 'Hue Color Lamp');
    const devices = (await api('/api/home/devices')) as HomeDeviceJson[];
    assert.equal(devices.find((d) => d.id === FAN)?.name, 'Desk fan');
    assert.equal(devices.find((d) => d.id === LAMP)?.name, 'Hue Color Lamp');
  });

  it('the page\'s card for it says "Desk fan", and the lamp\'s "Hue Color Lamp"', async () => {
    const signed = await openSignedIn(home.base, home.owner, { profileDir: join(home.dir, 'profile'), viewport: DESKTOP, name: 'owner', hash: '#devices' });
    contexts.push(signed.context);
    const { page } = signed;
    const card = page.locator(`.device-card[data-device="${FAN}"]`);
    await card.locator(`.entity[data-entity="${FAN}.switch"]`).waitFor();
    assert.equal(await card.getAttribute('aria-label'), 'Desk fan');
    const text = (await card.textContent()) ?? '';
    assert.match(text, /Desk fan/);
    assert.doesNotMatch(withoutIds(text), /desk_fan/);
    assert.equal(await page.locator(`.device-card[data-device="${LAMP}"]`).getAttribute('aria-label'), 'Hue Color Lamp');
    await page.screenshot({ path: join(PAGE_ARTIFACTS, 'owners-names.png'), fullPage: true });
    assert.deepEqual(signed.problems, []);
  });

  it('`hearth chat` says "the desk fan", the words the table shows', async () => {
    const r = await cli(['chat'], 'is the desk fan on?\n/quit\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^No, the desk fan is off\.$/m);
    assert.match(r.stdout, /← "Desk fan" \(office_desk_fan\.switch, area "Office"\)/);
    assert.doesNotMatch(withoutIds(r.stdout), /desk_fan/);
  });
});
