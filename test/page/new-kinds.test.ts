/// <reference lib="dom" />
// The cards of the kinds #31 added, in headless Chromium at desktop and phone sizes, against an in-process
// Hearth on a real broker: the demo home's simulated robot vacuum and siren, and the other kinds as Home
// Assistant's MQTT discovery announces them, answered by a fake device the way the real ones answer. Each
// card reads in words (no snake_case, no JSON); each control lands on the broker and in the audit as the
// signed-in principal; a siren sounding and a firmware install wait for a person (migration 0015) and
// the card says so.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { drawCameraFrame } from '../../src/simulator/camera-frame.js';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';
import { CHROMIUM, DESKTOP, openSignedIn, PAGE_ARTIFACTS, PHONE, pastTheEdge, type SignedInPage } from '../helpers/page-browser.js';
import { waitFor } from '../helpers/wait.js';

/** Discovery configs of the kinds the demo home lacks (Home Assistant's documented keys). */
const CONFIGS: Record<string, Record<string, unknown>> = {
  'scene/movie_time': { name: 'Movie time', unique_id: 'movie_time', command_topic: 'k/scene/movie/set' },
  'lawn_mower/mower': {
    name: 'Lawn mower',
    unique_id: 'mower',
    activity_state_topic: 'k/mower/activity',
    start_mowing_command_topic: 'k/mower/start_mowing/set',
    pause_command_topic: 'k/mower/pause/set',
    dock_command_topic: 'k/mower/dock/set',
  },
  'humidifier/bedroom': {
    name: 'Bedroom humidifier',
    unique_id: 'bedroom_hum',
    command_topic: 'k/hum/power/set',
    state_topic: 'k/hum/state',
    target_humidity_command_topic: 'k/hum/target/set',
    target_humidity_state_topic: 'k/hum/target',
    mode_command_topic: 'k/hum/mode/set',
    mode_state_topic: 'k/hum/mode',
    modes: ['normal', 'eco', 'sleep', 'comfort_plus'],
    min_humidity: 30,
    max_humidity: 80,
  },
  'water_heater/boiler': {
    name: 'Water heater',
    unique_id: 'boiler',
    mode_command_topic: 'k/wh/mode/set',
    mode_state_topic: 'k/wh/mode',
    temperature_command_topic: 'k/wh/temp/set',
    temperature_state_topic: 'k/wh/temp',
    current_temperature_topic: 'k/wh/current',
    power_command_topic: 'k/wh/power/set',
  },
  'text/hall': { name: 'Hall display', unique_id: 'hall_display', command_topic: 'k/hall/set', state_topic: 'k/hall', max: 40 },
  'notify/speaker': { name: 'Kitchen speaker', unique_id: 'kitchen_speaker', command_topic: 'k/speaker/say' },
  'device_tracker/anna': { name: 'Anna', unique_id: 'anna_phone', state_topic: 'k/anna' },
  'device_tracker/ben': { name: 'Ben', unique_id: 'ben_phone', state_topic: 'k/ben' },
  'device_tracker/carl': { name: 'Carl', unique_id: 'carl_phone', state_topic: 'k/carl' },
  'event/doorbell': { name: 'Doorbell', unique_id: 'doorbell_button', state_topic: 'k/doorbell', event_types: ['press', 'long_press'] },
  'update/router': { name: 'Router firmware', unique_id: 'router_fw', state_topic: 'k/fw/state', command_topic: 'k/fw/install', payload_install: 'install' },
  'image/snapshot': { name: 'Doorbell snapshot', unique_id: 'doorbell_snap', image_topic: 'k/snapshot', image_encoding: 'b64' },
};

/** Firmware versions as long as real ones get (a build hash): they must wrap on a phone, not stick out. */
const INSTALLED = 'v2024.10.1-beta.3+build.7f3c2a9e1b4d';
const LATEST = 'v2024.11.0-rc.1+build.0a1b2c3d4e5f';

/** What the fake devices report after a command: the state they are in. */
function answer(topic: string, payload: string): Array<[string, string]> {
  const mower = /^k\/mower\/(\w+)\/set$/.exec(topic);
  if (mower) return [['k/mower/activity', { start_mowing: 'mowing', pause: 'paused', dock: 'docked' }[mower[1]!] ?? 'error']];
  switch (topic) {
    case 'k/hum/power/set':
      return [['k/hum/state', payload]];
    case 'k/hum/target/set':
      return [['k/hum/target', payload]];
    case 'k/hum/mode/set':
      return [['k/hum/mode', payload]];
    case 'k/wh/mode/set':
      return [['k/wh/mode', payload]];
    case 'k/wh/temp/set':
      return [['k/wh/temp', payload]];
    case 'k/hall/set':
      return [['k/hall', payload]];
    case 'k/fw/install':
      return [['k/fw/state', JSON.stringify({ installed_version: INSTALLED, latest_version: LATEST, in_progress: true })]];
  }
  return [];
}

for (const shape of ['per-entity', 'grouped'] as const) {
  // Grouped: a kind's one tool takes the entity, even while the home has one vacuum (the page must say which).
  describe(`cards of the new kinds (vacuum, mower, humidifier, water heater, siren, scene, text, notify, presence, event, update, image), ${shape} tools`, () => {
    cardsOfTheNewKinds(shape);
  });
}

function cardsOfTheNewKinds(shape: 'per-entity' | 'grouped') {
  const home = useHttpHome({ shape, tokens: OWNER_AND_GUEST, extraSettings: { 'discovery.zigbee2mqtt.enabled': 'false' } });
  const shot = (name: string) => join(PAGE_ARTIFACTS, `${name}${shape === 'grouped' ? '-grouped' : ''}.png`);
  const received: Array<{ topic: string; payload: string }> = [];
  let open: SignedInPage;
  let page: Page;
  const card = (id: string) => page.locator(`.entity[data-entity="${id}"]`);
  const idOf = (name: string) => waitFor(`${name} in the registry`, () => home.hearth.bridge.registry.entities().find((e) => e.name === name)?.id, 10_000);
  const outcome = (c: Locator, want: string) => c.locator('.control-status .outcome', { hasText: new RegExp(`^${want}$`) }).waitFor({ timeout: 20_000 });
  /** `held`: refused by a confirm rule, waiting for a person (stored as denied with the decision confirm). */
  const audited = (entity: string, action: string, result: 'confirmed' | 'held' = 'confirmed') =>
    waitFor(
      `${action} on ${entity} (${result}) in the audit as http:owner`,
      () =>
        home.hearth.audit
          .list({ limit: 100 })
          .find(
            (r) =>
              r.entityId === entity &&
              r.action === action &&
              r.principal === 'http:owner' &&
              (result === 'held' ? r.outcome === 'denied' && r.decision.startsWith('confirm') : r.outcome === result),
          ),
      15_000,
    );
  const sent = (topic: string, payload?: string) =>
    waitFor(`${topic}${payload === undefined ? '' : ` ${payload}`} on the broker`, () =>
      received.some((m) => m.topic === topic && (payload === undefined || m.payload === payload)),
    );
  /** A card's text as a person reads it (its details too, open or not), less the entity id the details name. */
  const readable = async (c: Locator) => {
    const text = await c.evaluate((el) => {
      const copy = el.cloneNode(true) as HTMLElement;
      for (const code of copy.querySelectorAll('code')) code.remove();
      return copy.textContent ?? '';
    });
    assert.doesNotMatch(text, /[A-Za-z]_[A-Za-z]/, `snake_case words on a card: ${text}`);
    assert.doesNotMatch(text, /[{}[\]"]/, `raw JSON on a card: ${text}`);
    // No word runs past the card's edge (a long firmware version, a long message), at any width.
    const outside = await pastTheEdge(c);
    assert.deepEqual(outside, [], 'text or controls that run past the card');
    return text;
  };
  const grant = async (entity: string) => {
    const list = (await home.api('GET', '/api/approvals?status=pending', { token: home.secret('owner') })).json as Array<{ id: string; entityId?: string }>;
    const held = list.find((a) => a.entityId === entity);
    assert.ok(held, `a pending approval for ${entity}: ${JSON.stringify(list)}`);
    const r = await home.api('POST', `/api/approvals/${held.id}`, { token: home.secret('owner'), body: { decision: 'grant' } });
    assert.equal(r.status, 200, r.text);
  };

  before(async () => {
    assert.ok(CHROMIUM, 'Chromium is not installed');
    mkdirSync(PAGE_ARTIFACTS, { recursive: true });
    const device = home.device;
    device.on('message', (topic, payload) => {
      const text = payload.toString('utf8');
      received.push({ topic, payload: text });
      for (const [t, p] of answer(topic, text)) void device.publishAsync(t, p, { retain: true, qos: 1 });
    });
    await device.subscribeAsync(['k/#', 'hearth-demo/robot_vacuum/#', 'hearth-demo/siren/#'], { qos: 1 });
    for (const [path, config] of Object.entries(CONFIGS))
      await device.publishAsync(`homeassistant/${path}/config`, JSON.stringify(config), { retain: true, qos: 1 });
    for (const [topic, payload] of [
      ['k/mower/activity', 'docked'],
      ['k/hum/state', 'OFF'],
      ['k/hum/target', '45'],
      ['k/hum/mode', 'normal'],
      ['k/wh/mode', 'eco'],
      ['k/wh/temp', '50'],
      ['k/wh/current', '47.5'],
      ['k/hall', 'Welcome home'],
      ['k/anna', 'home'],
      ['k/ben', 'not_home'],
      ['k/carl', 'Work'],
      ['k/doorbell', JSON.stringify({ event_type: 'press' })],
      ['k/fw/state', JSON.stringify({ installed_version: INSTALLED, latest_version: LATEST })],
      ['k/snapshot', (await drawCameraFrame(new Date(), { label: 'DOORBELL' })).toString('base64')],
    ])
      await device.publishAsync(topic!, payload!, { retain: true, qos: 1 });
    await waitFor(
      'the discovered kinds and their states',
      () =>
        Object.values(CONFIGS).every((c) => {
          const e = home.hearth.bridge.registry.entities().find((x) => x.name === c.name);
          const s = e && home.hearth.bridge.cache.get(e.id);
          return e && (e.kind === 'scene' || e.kind === 'notify' || (s && (s.value !== undefined || s.frame)));
        }),
      15_000,
    );
    open = await openSignedIn(home.server.url, home.secret('owner'), {
      profileDir: join(home.dir, 'profile-desktop'),
      viewport: DESKTOP,
      name: 'desktop',
      hash: '#devices',
    });
    page = open.page;
    await card('robot_vacuum.vacuum').waitFor();
  });
  after(async () => {
    await open?.context.close().catch(() => undefined);
  });

  it('vacuum: state words and battery; start, pause and return to base, each confirmed and audited', async () => {
    const vac = card('robot_vacuum.vacuum');
    const text = await readable(vac);
    assert.match(text, /Docked/);
    assert.match(text, /Battery \d+% · fan speed quiet/);
    for (const control of ['start', 'pause', 'return_to_base']) assert.equal(await vac.locator(`button[data-control="${control}"]`).count(), 1, control);
    await vac.locator('button[data-control="start"]').click();
    await outcome(vac, 'confirmed');
    await vac.locator('.value', { hasText: 'Cleaning' }).waitFor();
    await sent('hearth-demo/robot_vacuum/command', 'start');
    await audited('robot_vacuum.vacuum', 'start');
    await vac.locator('button[data-control="pause"]').click();
    await vac.locator('.value', { hasText: 'Paused' }).waitFor({ timeout: 20_000 });
    await audited('robot_vacuum.vacuum', 'pause');
    await vac.locator('button[data-control="return_to_base"]').click();
    await vac.locator('.value', { hasText: /Returning|Docked/ }).waitFor({ timeout: 20_000 });
    await sent('hearth-demo/robot_vacuum/command', 'return_to_base');
    await audited('robot_vacuum.vacuum', 'return_to_base');
    await vac.locator('select[data-control="fan_speed"]').selectOption('max');
    await vac.locator('button[data-control="fan_speed-set"]').click();
    await sent('hearth-demo/robot_vacuum/fan_speed/set', 'max');
    await audited('robot_vacuum.vacuum', 'set_fan_speed');
  });

  it('lawn mower: start mowing and dock, confirmed by its activity', async () => {
    const id = await idOf('Lawn mower');
    const mower = card(id);
    assert.match(await readable(mower), /Docked/);
    await mower.locator('button[data-control="start_mowing"]').click();
    await outcome(mower, 'confirmed');
    await mower.locator('.value', { hasText: 'Mowing' }).waitFor();
    await sent('k/mower/start_mowing/set');
    await audited(id, 'start_mowing');
    await mower.locator('button[data-control="dock"]').click();
    await mower.locator('.value', { hasText: 'Docked' }).waitFor({ timeout: 20_000 });
    await audited(id, 'dock');
  });

  it('humidifier: on, a target humidity in % and a mode in words', async () => {
    const id = await idOf('Bedroom humidifier');
    const hum = card(id);
    const text = await readable(hum);
    assert.match(text, /Comfort plus/, 'modes read as words');
    assert.match(text, /target humidity\s*45%/, 'the target humidity with its unit, in the details');
    await hum.locator('button.toggle').click();
    await outcome(hum, 'confirmed');
    await sent('k/hum/power/set', 'ON');
    await hum.locator('input[data-control="humidity"]').fill('60');
    await sent('k/hum/target/set', '60');
    await audited(id, 'set_humidity');
    await hum.locator('.value', { hasText: '60%' }).waitFor();
    await hum.locator('select[data-control="mode"]').selectOption('sleep');
    await hum.locator('button[data-control="mode-set"]').click();
    await sent('k/hum/mode/set', 'sleep');
    await audited(id, 'set_mode');
  });

  it('water heater: its current temperature, its target with °C, and a mode in words', async () => {
    const id = await idOf('Water heater');
    const wh = card(id);
    const text = await readable(wh);
    assert.match(text, /47\.5 °C/, 'the water temperature with its unit');
    assert.match(text, /Target 50 °C · Eco/);
    assert.match(text, /High demand|Heat pump/, 'modes read as words');
    await wh.locator('input[data-control="target"]').fill('55');
    await sent('k/wh/temp/set', '55');
    await audited(id, 'set_temperature');
    await wh.locator('.sub', { hasText: 'Target 55 °C' }).waitFor();
    await wh.locator('select[data-control="mode"]').selectOption('performance');
    await wh.locator('button[data-control="mode-set"]').click();
    await sent('k/wh/mode/set', 'performance');
    await audited(id, 'set_mode');
    await wh.locator('.sub', { hasText: 'Performance' }).waitFor();
  });

  it('siren: sounding it waits for approval and the card says so; once granted it sounds', async () => {
    const siren = card('siren.siren');
    assert.match(await readable(siren), /Off/);
    await siren.locator('button.toggle').click();
    await outcome(siren, 'held');
    const status = (await siren.locator('.control-status').textContent()) ?? '';
    assert.match(status, /waiting for approval/);
    assert.doesNotMatch(status, /fail|error/i);
    await audited('siren.siren', 'turn_on', 'held');
    assert.ok(!received.some((m) => m.topic === 'hearth-demo/siren/set'), 'nothing is sent before a person approves');
    await grant('siren.siren');
    await outcome(siren, 'confirmed');
    await sent('hearth-demo/siren/set');
    await siren.locator('button.toggle[aria-checked="true"]').waitFor();
    await audited('siren.siren', 'turn_on');
  });

  it('scene: Activate is one audited call', async () => {
    const id = await idOf('Movie time');
    const scene = card(id);
    await readable(scene);
    await scene.locator('button[data-control="activate"]').click();
    await outcome(scene, 'confirmed');
    await sent('k/scene/movie/set', 'ON');
    await audited(id, 'activate');
  });

  it('text and notify: the typed words are sent and audited', async () => {
    const textId = await idOf('Hall display');
    const hall = card(textId);
    assert.equal(await hall.locator('input[data-control="text"]').inputValue(), 'Welcome home');
    await hall.locator('input[data-control="text"]').fill('Dinner at 7');
    // The display reports while the person types: the card is redrawn, the typed words stay.
    await home.device.publishAsync('k/hall', 'Lights out at 11', { retain: true, qos: 1 });
    await hall.locator('.value', { hasText: 'Lights out at 11' }).waitFor();
    assert.equal(await hall.locator('input[data-control="text"]').inputValue(), 'Dinner at 7');
    await hall.locator('button[data-control="set-text"]').click();
    await outcome(hall, 'confirmed');
    await sent('k/hall/set', 'Dinner at 7');
    await audited(textId, 'set_text');
    await hall.locator('.value', { hasText: 'Dinner at 7' }).waitFor();
    const notifyId = await idOf('Kitchen speaker');
    const speaker = card(notifyId);
    await speaker.locator('input[data-control="message"]').fill('The laundry is done');
    await speaker.locator('button[data-control="send"]').click();
    await outcome(speaker, 'confirmed');
    await sent('k/speaker/say', 'The laundry is done');
    await audited(notifyId, 'send_message');
    assert.equal(await speaker.locator('input[data-control="message"]').inputValue(), '', 'a sent message leaves the box');
  });

  it('presence: home, away and a zone; the doorbell: its last event and when', async () => {
    const values = async (name: string) =>
      (
        await card(await idOf(name))
          .locator('.value')
          .textContent()
      )?.trim();
    assert.equal(await values('Anna'), 'Home');
    assert.equal(await values('Ben'), 'Away');
    assert.equal(await values('Carl'), 'Work');
    for (const name of ['Anna', 'Ben', 'Carl']) await readable(card(await idOf(name)));
    const bell = card(await idOf('Doorbell'));
    const text = await readable(bell);
    assert.match(text, /Press/);
    assert.match(text, /Last event (just now|.* ago|before Hearth started)/, 'when the last event was');
    await home.device.publishAsync('k/doorbell', JSON.stringify({ event_type: 'long_press' }), { qos: 1 });
    await bell.locator('.value', { hasText: 'Long press' }).waitFor();
  });

  it('update: installed and latest version; installing waits for approval, not a failure', async () => {
    const id = await idOf('Router firmware');
    const fw = card(id);
    const text = await readable(fw);
    assert.ok(text.includes(`Installed ${INSTALLED} · latest ${LATEST}`), text);
    await fw.locator('button[data-control="install"]').click();
    await outcome(fw, 'held');
    assert.match((await fw.locator('.control-status').textContent()) ?? '', /waiting for approval/);
    await audited(id, 'install', 'held');
    assert.ok(!received.some((m) => m.topic === 'k/fw/install'), 'nothing is sent before a person approves');
    await grant(id);
    await outcome(fw, 'confirmed');
    await sent('k/fw/install', 'install');
    await audited(id, 'install');
  });

  it('image: a frame, as a camera card shows it', async () => {
    const fw = card(await idOf('Doorbell snapshot'));
    await fw.locator('img.frame[src^="blob:"]').waitFor();
    assert.match(await readable(fw), /Live picture|picture/i);
    await page.screenshot({ path: shot('dash-12-new-kinds-desktop'), fullPage: true });
    assert.deepEqual(open.problems, []);
  });

  it('a guest sees the robot, the siren and the firmware without a control, told why', async () => {
    const guest = await openSignedIn(home.server.url, home.secret('guest'), {
      profileDir: join(home.dir, 'profile-guest'),
      viewport: DESKTOP,
      name: 'guest',
      hash: '#devices',
    });
    try {
      for (const id of ['robot_vacuum.vacuum', 'siren.siren', await idOf('Router firmware'), await idOf('Movie time')]) {
        const c = guest.page.locator(`.entity[data-entity="${id}"]`);
        await c.waitFor();
        assert.equal(await c.locator('.controls button, .controls select, .controls input').count(), 0, `${id}: no control for a guest`);
        assert.match((await c.locator('.cannot').textContent()) ?? '', /^View only: no policy rule lets http:guest/);
      }
      assert.deepEqual(guest.problems, []);
    } finally {
      await guest.context.close().catch(() => undefined);
    }
  });

  it('phone: every new kind has its card, readable and within the screen', async () => {
    const phone = await openSignedIn(home.server.url, home.secret('owner'), {
      profileDir: join(home.dir, 'profile-phone'),
      viewport: PHONE,
      name: 'phone',
      hash: '#devices',
    });
    try {
      const p = phone.page;
      await p.locator('.entity[data-entity="robot_vacuum.vacuum"]').waitFor();
      const ids = ['robot_vacuum.vacuum', 'siren.siren', ...(await Promise.all(Object.values(CONFIGS).map((c) => idOf(String(c.name)))))];
      for (const id of ids) {
        const c = p.locator(`.entity[data-entity="${id}"]`);
        await c.waitFor();
        await readable(c);
        const box = await c.boundingBox();
        assert.ok(box && box.x >= 0 && box.x + box.width <= PHONE.width + 1, `${id} fits the phone's width: ${JSON.stringify(box)}`);
        const overflow = await c.evaluate((el) => el.scrollWidth > el.clientWidth + 1);
        assert.equal(overflow, false, `${id}: nothing sticks out of its card`);
      }
      await p.screenshot({ path: shot('dash-13-new-kinds-phone'), fullPage: true });
      // A screenful at the robot and one at the firmware, as a phone shows them.
      for (const [id, name] of [
        ['robot_vacuum.vacuum', 'vacuum'],
        [await idOf('Router firmware'), 'update'],
      ]) {
        await p.locator(`.entity[data-entity="${id}"]`).scrollIntoViewIfNeeded();
        await p.screenshot({ path: shot(`dash-13-new-kinds-phone-${name}`) });
      }
      assert.deepEqual(phone.problems, []);
    } finally {
      await phone.context.close().catch(() => undefined);
    }
  });
}
