/// <reference lib="dom" />
// The page tells an owner why a device has no command: the front door lock and the bedroom blind (Zigbee2MQTT) are
// missing from a bridge/devices list that names a newcomer after each; the newcomers are refused (the lock and the
// blind, away, keep their `set` topics), and a Tasmota-style discovery config aims a plug at the hall switch's topic
// (its owner present). Below the cards an owner reads which entities were left out, whose topic it is and what frees
// it: the entities on an away device's topics grouped under that device with one Forget for it (a newcomer's several
// entities on the lock's topic are one thing to forget, not several), the plug listed as before. A guest's page shows
// no such list (and never asks for it). Headless Chromium against a real HTTP server on a Hearth on aedes with a real
// SQLite file; Zigbee2MQTT's own fixture list.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { BrowserContext } from 'playwright-core';
import type { Hearth } from '../../src/hearth.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { CHROMIUM, DESKTOP, openSignedIn, PAGE_ARTIFACTS } from '../helpers/page-browser.js';
import { waitFor } from '../helpers/wait.js';
import { z2mEntry } from '../helpers/zigbee2mqtt.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'z2m');
const LIST: Array<{ friendly_name: string }> = JSON.parse(readFileSync(join(FIXTURES, 'bridge-devices.json'), 'utf8'));

describe('the page says which entities were left out for their command topic, and why', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-page-left-out-'));
  let broker: TestBroker;
  let hearth: Hearth;
  let server: HttpServer;
  let device: MqttClient;
  const contexts: BrowserContext[] = [];
  /** The plug's entity, refused for the hall switch's topic (its id is the discovery's to make). */
  let plug: string;
  /** The bridge/devices list published after the first. */
  let later: Array<{ friendly_name?: string }> = [];

  /** The entities left out for the topics of this away device, as Hearth has them. */
  const refusedFor = (awayDevice: string) =>
    hearth.bridge.registry
      .refusedClaims()
      .filter((r) => r.awayOwner?.startsWith(`${awayDevice}.`))
      .map((r) => r.refused.id)
      .sort();

  before(async () => {
    assert.ok(CHROMIUM, 'Chromium is not installed (chromium-headless-shell or chromium, or HEARTH_CHROMIUM)');
    mkdirSync(PAGE_ARTIFACTS, { recursive: true });
    broker = await startAedes();
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    const publish = (topic: string, payload: unknown) => device.publishAsync(topic, JSON.stringify(payload), { qos: 1, retain: true });
    await device.publishAsync('zigbee2mqtt/bridge/info', readFileSync(join(FIXTURES, 'bridge-info.json'), 'utf8'), { qos: 1, retain: true });
    await publish('zigbee2mqtt/bridge/devices', LIST);
    hearth = await openHearth(broker.url, dir, logSink('warn').log, { 'mqtt.protocolVersion': '4', 'discovery.homie.enabled': false });
    server = await startHttpServer({ hearth, host: '127.0.0.1', port: 0, log: logSink('warn').log, mounts: [] });
    hearth.policy.setRoles('http:owner', ['owner']);
    hearth.policy.setRoles('http:guest', ['guest']);
    await waitFor('the lock and the blind', () => hearth.bridge.registry.entity('front_door_lock.lock') && hearth.bridge.registry.device('bedroom_blind'));
    // The list again, without the lock and the blind: a "light" of the lock's name, and a blind paired anew under the old one's.
    later = [
      ...LIST.filter((d) => d.friendly_name !== 'Front door lock' && d.friendly_name !== 'Bedroom blind'),
      await z2mEntry('LED1545G12', '0x00deadbeef000001', 'Front door lock'),
      await z2mEntry('E1757', '0x00deadbeef000002', 'Bedroom blind'),
    ];
    await publish('zigbee2mqtt/bridge/devices', later);
    // A plug's discovery config (as Tasmota sends one) aimed at the hall switch's command topic: its owner is in the home.
    await publish('homeassistant/switch/tasmota_hall_plug/config', {
      name: 'Hall plug',
      unique_id: 'tasmota_4c11ae_relay_1',
      command_topic: 'zigbee2mqtt/Hall switch/set',
      state_topic: 'stat/tasmota_4c11ae/POWER',
    });
    await waitFor('the newcomers refused', () => refusedFor('front_door_lock').includes('front_door_lock_2.light') && refusedFor('bedroom_blind').length > 0);
    plug = await waitFor('the plug refused', () => hearth.bridge.registry.refusedClaims().find((r) => r.owner?.deviceId === 'hall_switch')?.refused.id);
  });
  after(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await server?.close();
    await hearth?.close();
    await device?.endAsync(true);
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The Devices view at desktop size, signed in with `token`, in a browser profile of its own (closed after the file). */
  const signIn = async (token: string, name: string, profile: string) => {
    const signed = await openSignedIn(server.url, token, { profileDir: join(dir, profile), viewport: DESKTOP, name, hash: '#devices' });
    contexts.push(signed.context);
    return signed;
  };

  it('an owner reads each away device once, with one Forget and the entities on its topics under it, the rest as before; a guest sees no list', async () => {
    const lockRefused = refusedFor('front_door_lock');
    assert.ok(lockRefused.length > 1, `the newcomer on the lock's topic has several entities left out: ${lockRefused.join(', ')}`);
    const all = hearth.bridge.registry.refusedClaims().length;
    const owner = await signIn(hearth.tokens.create('owner-phone', 'http:owner').secret, 'owner', 'profile-owner');
    const box = owner.page.locator('#devices-left-out');
    await box.locator('summary', { hasText: `No command for ${all} entities (left out)` }).click();

    // The lock: said once, with one Forget, and each of the newcomer's entities under it.
    const lock = box.locator('[data-away="front_door_lock"]');
    assert.match(
      (await lock.locator('p').textContent())!,
      new RegExp(
        `^front_door_lock is away \\(remembered, not in the home now\\) and holds the command topics these ${lockRefused.length} entities claim; if it is really gone, forgetting it frees them \\(\`hearth devices forget front_door_lock\`\\) Forget$`,
      ),
    );
    assert.equal(await box.getByRole('button', { name: 'Forget front_door_lock' }).count(), 1);
    assert.deepEqual((await lock.locator('li').allTextContents()).map((t) => t.match(/\(([^)]+)\)/)![1]).sort(), lockRefused);
    assert.match(
      (await lock.locator('li', { hasText: '(front_door_lock_2.light)' }).textContent())!,
      /^Front door lock \(front_door_lock_2\.light\): its command topic zigbee2mqtt\/Front door lock\/set is held by front_door_lock\.\w+$/,
    );
    // Two away devices: two Forget buttons in all, one each.
    assert.equal(await box.getByRole('button', { name: 'Forget bedroom_blind' }).count(), 1);
    assert.equal(await box.locator('button').count(), 2);
    assert.deepEqual(
      (await box.locator('[data-away="bedroom_blind"] li').allTextContents()).map((t) => t.match(/\(([^)]+)\)/)![1]).sort(),
      refusedFor('bedroom_blind'),
    );
    // The new blind's battery reads the old blind's state topic: listed under the away blind as a state topic it reads.
    const batteryRead = hearth.bridge.registry.refusedClaims().find((r) => r.read && r.awayOwner?.startsWith('bedroom_blind.'));
    assert.ok(batteryRead, 'an entity of the new blind with no command topic is left out for the state topic the away blind read');
    assert.match(
      (await box.locator('[data-away="bedroom_blind"] li', { hasText: `(${batteryRead.refused.id})` }).textContent())!,
      /: its state topic zigbee2mqtt\/Bedroom blind is read by bedroom_blind\.\w+$/,
    );
    assert.match(
      (await box.locator('[data-away="bedroom_blind"] p').textContent())!,
      /^bedroom_blind is away \(remembered, not in the home now\) and holds the command and state topics these \d+ entities claim;/,
    );
    // The plug, whose topic's owner is in the home: listed as before, in no device's group and with nothing to forget.
    const plugLine = box.locator(':scope > ul > li', { hasText: `(${plug})` });
    assert.match(
      (await plugLine.textContent())!,
      new RegExp(`^Hall plug \\(${plug.replace(/\./g, '\\.')}\\): its command topic zigbee2mqtt/Hall switch/set belongs to hall_switch\\.\\w+$`),
    );
    await owner.page.screenshot({ path: join(PAGE_ARTIFACTS, 'left-out.png'), fullPage: true });
    assert.deepEqual(owner.problems, []);

    const guestRequests: string[] = [];
    const guest = await signIn(hearth.tokens.create('guest-tablet', 'http:guest').secret, 'guest', 'profile-guest');
    guest.page.on('request', (r) => guestRequests.push(r.url()));
    await guest.page.reload();
    await guest.page.locator('#live', { hasText: 'live' }).waitFor();
    await guest.page.locator('#devices section.area').first().waitFor();
    assert.equal(await guest.page.locator('#devices-left-out').isHidden(), true);
    assert.deepEqual(
      guestRequests.filter((u) => u.includes('/api/devices/refused')),
      [],
    );
    assert.deepEqual(guest.problems, []);
  });

  it('an owner forgets the away lock (asked first): its group goes, the blind stays; a guest has no Forget and a forged one is refused', async () => {
    // A guest first: no button, and a DELETE sent by hand with the guest's own token is refused; nothing is forgotten.
    const guestToken = hearth.tokens.create('guest-phone', 'http:guest').secret;
    const guest = await signIn(guestToken, 'guest', 'profile-guest-2');
    await guest.page.locator('#devices section.area').first().waitFor();
    assert.equal(await guest.page.locator('button[data-control="forget"]').count(), 0);
    const forged = await guest.page.evaluate(async (token) => {
      const res = await fetch('/api/home/devices/front_door_lock', { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
      return res.status;
    }, guestToken);
    assert.equal(forged, 403);
    assert.ok(refusedFor('front_door_lock').includes('front_door_lock_2.light'));

    const owner = await signIn(hearth.tokens.create('owner-laptop', 'http:owner').secret, 'owner', 'profile-owner-2');
    const deletes: string[] = [];
    owner.page.on('request', (r) => {
      if (r.method() === 'DELETE') deletes.push(r.url());
    });
    const box = owner.page.locator('#devices-left-out');
    await box.locator('summary').click();
    // Left out, the newcomer has no card: it is not among the devices a person can command.
    const card = owner.page.locator('.entity[data-entity="front_door_lock_2.light"]');
    assert.equal(await card.count(), 0);
    const forget = box.getByRole('button', { name: 'Forget front_door_lock' });
    // Asked first: said no to, nothing is sent and the lock still holds its topic.
    const asked: string[] = [];
    owner.page.once('dialog', (d) => {
      asked.push(d.message());
      void d.dismiss();
    });
    await forget.click();
    assert.match(asked[0] ?? '', /^Forget front_door_lock\? Do this only if it is really gone/);
    assert.deepEqual(deletes, []);
    assert.equal(await box.locator('[data-away="front_door_lock"]').isVisible(), true);
    // Said yes to: the lock is forgotten, its group is gone, the newcomer's card turns on and off; the blind's group
    // and the plug stay, with the blind's one Forget.
    owner.page.once('dialog', (d) => void d.accept());
    await forget.click();
    await owner.page.locator('#toast', { hasText: 'Forgot front_door_lock: its command topics and names are free' }).waitFor();
    await waitFor('the newcomer holding the topic', () => !refusedFor('front_door_lock').length);
    await box.locator('[data-away="front_door_lock"]').waitFor({ state: 'detached' });
    await card.locator('[data-control]').first().waitFor();
    const left = hearth.bridge.registry.refusedClaims().length;
    await box.locator('summary', { hasText: `No command for ${left} ${left === 1 ? 'entity' : 'entities'} (left out)` }).waitFor();
    assert.equal(await box.locator('[data-away="bedroom_blind"]').isVisible(), true);
    assert.deepEqual(await box.locator('button').evaluateAll((bs) => bs.map((b) => b.getAttribute('aria-label'))), ['Forget bedroom_blind']);
    assert.equal(await box.locator('li', { hasText: `(${plug})` }).isVisible(), true);
    await owner.page.screenshot({ path: join(PAGE_ARTIFACTS, 'left-out-forgotten.png'), fullPage: true });
    assert.equal(deletes.length, 1);
    assert.deepEqual(owner.problems, []);
    assert.deepEqual(guest.problems, []);
  });

  it('an owner confirms a rename made in Zigbee2MQTT (asked first): the light takes its new topic; a guest has no Confirm', async () => {
    // The living room light renamed in Zigbee2MQTT: its move to the new topic waits (a forged list looks the same).
    await device.publishAsync(
      'zigbee2mqtt/bridge/devices',
      JSON.stringify(later.map((d) => (d.friendly_name === 'Living room light' ? { ...d, friendly_name: 'Lounge light' } : d))),
      { qos: 1, retain: true },
    );
    const waiting = () =>
      hearth.bridge.registry
        .refusedClaims()
        .filter((r) => r.movedFrom && r.refused.deviceId === 'living_room_light')
        .map((r) => r.refused.id)
        .sort();
    await waitFor('the move waiting', () => waiting().includes('living_room_light.light'));
    const guest = await signIn(hearth.tokens.create('guest-watch', 'http:guest').secret, 'guest', 'profile-guest-3');
    await guest.page.locator('#devices section.area').first().waitFor();
    assert.equal(await guest.page.locator('button[data-control="confirm-move"]').count(), 0);

    const owner = await signIn(hearth.tokens.create('owner-desk', 'http:owner').secret, 'owner', 'profile-owner-3');
    const posts: string[] = [];
    owner.page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/move')) posts.push(`${r.url()} ${r.postData()}`);
    });
    const box = owner.page.locator('#devices-left-out');
    await box.locator('summary').click();
    const group = box.locator('[data-moved="living_room_light"]');
    assert.match((await group.locator('p').textContent())!, /^living_room_light was moved by its source \(a rename in Zigbee2MQTT, or a forged message/);
    assert.deepEqual((await group.locator('li').allTextContents()).map((t) => t.match(/\(([^)]+)\)/)![1]).sort(), waiting());
    assert.match(
      (await group.locator('li', { hasText: '(living_room_light.light)' }).textContent())!,
      /: to zigbee2mqtt\/Lounge light\/set from zigbee2mqtt\/Living room light\/set$/,
    );
    const confirm = box.getByRole('button', { name: 'Confirm the move of living_room_light' });
    // Asked first: said no to, nothing is sent.
    const asked: string[] = [];
    owner.page.once('dialog', (d) => {
      asked.push(d.message());
      void d.dismiss();
    });
    await confirm.click();
    assert.match(asked[0] ?? '', /^Did you rename living_room_light so that it now takes commands on zigbee2mqtt\/Lounge light\/set\? Confirm only if you did/);
    assert.deepEqual(posts, []);
    owner.page.once('dialog', (d) => void d.accept());
    await confirm.click();
    await owner.page.locator('#toast', { hasText: 'living_room_light moved to zigbee2mqtt/Lounge light/set' }).waitFor();
    await waitFor(
      'the light on its new topic',
      () => hearth.bridge.registry.entity('living_room_light.light')?.commandTopic === 'zigbee2mqtt/Lounge light/set',
    );
    await group.waitFor({ state: 'detached' });
    await owner.page.locator('.entity[data-entity="living_room_light.light"] [data-control]').first().waitFor();
    assert.equal(posts.length, 1);
    assert.match(posts[0]!, /\/api\/home\/devices\/living_room_light\/move \{"to":"zigbee2mqtt\/Lounge light\/set"\}$/);
    assert.deepEqual(owner.problems, []);
    assert.deepEqual(guest.problems, []);
  });
});
