/// <reference lib="dom" />
// The page tells an owner why a device has no command: the front door lock (Zigbee2MQTT) is missing from a
// bridge/devices list that names a newcomer after it; the newcomer is refused (the lock, away, keeps its `set`
// topic), and below the cards an owner reads which entities were left out, whose topic it is and the command
// that frees it. A guest's page shows no such list (and never asks for it). Headless Chromium against a real HTTP
// server on a Hearth on aedes with a real SQLite file; Zigbee2MQTT's own fixture list.
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
    await waitFor('the lock', () => hearth.bridge.registry.entity('front_door_lock.lock'));
    // The list again, without the lock, with a "light" of its name.
    await publish('zigbee2mqtt/bridge/devices', [
      ...LIST.filter((d) => d.friendly_name !== 'Front door lock'),
      await z2mEntry('LED1545G12', '0x00deadbeef000001', 'Front door lock'),
    ]);
    await waitFor('the newcomer refused', () => hearth.bridge.registry.refusedClaims().some((r) => r.refused.id === 'front_door_lock_2.light' && r.awayOwner));
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

  it('an owner reads who holds the topic and how to free it; a guest sees no list', async () => {
    const owner = await signIn(hearth.tokens.create('owner-phone', 'http:owner').secret, 'owner', 'profile-owner');
    const box = owner.page.locator('#devices-left-out');
    await box.locator('summary', { hasText: /^No command for \d+ entities \(left out\)$/ }).click();
    const light = box.locator('li', { hasText: '(front_door_lock_2.light)' });
    assert.match(
      (await light.textContent())!,
      /^Front door lock \(front_door_lock_2\.light\): its command topic zigbee2mqtt\/Front door lock\/set is held by front_door_lock \(front_door_lock\.\w+\), which is away; if that device is really gone, `hearth devices forget front_door_lock` frees it Forget$/,
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

  it('an owner forgets the away lock (asked first) and the newcomer gets its topic; a guest has no Forget and a forged one is refused', async () => {
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
    assert.ok(hearth.bridge.registry.refusedClaims().some((r) => r.refused.id === 'front_door_lock_2.light' && r.awayOwner));

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
    const forget = box.locator('li', { hasText: '(front_door_lock_2.light)' }).getByRole('button', { name: 'Forget front_door_lock' });
    // Asked first: said no to, nothing is sent and the lock still holds its topic.
    const asked: string[] = [];
    owner.page.once('dialog', (d) => {
      asked.push(d.message());
      void d.dismiss();
    });
    await forget.click();
    assert.match(asked[0] ?? '', /^Forget front_door_lock\? Do this only if it is really gone/);
    assert.deepEqual(deletes, []);
    assert.equal(await box.isVisible(), true);
    // Said yes to: the lock is forgotten, the list is gone, and the newcomer's card turns on and off.
    owner.page.once('dialog', (d) => void d.accept());
    await forget.click();
    await owner.page.locator('#toast', { hasText: 'Forgot front_door_lock: its command topics and names are free' }).waitFor();
    await waitFor('the newcomer holding the topic', () => !hearth.bridge.registry.refusedClaims().length);
    await box.waitFor({ state: 'hidden' });
    await card.locator('[data-control]').first().waitFor();
    await owner.page.screenshot({ path: join(PAGE_ARTIFACTS, 'left-out-forgotten.png'), fullPage: true });
    assert.equal(deletes.length, 1);
    assert.deepEqual(owner.problems, []);
    assert.deepEqual(guest.problems, []);
  });
});
