/// <reference lib="dom" />
// The card controls of kinds the demo home lacks (fan speed and preset, a
// select, a number, a button), in headless Chromium against an in-process
// Hearth on a real broker with the simulator: each control's call lands on
// the broker and in the audit as the signed-in principal.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { BrowserContext, Page } from 'playwright-core';
import { loadConfig } from '../../src/config/load.js';
import { Hearth } from '../../src/hearth.js';
import { startHttpServer, type HttpServer } from '../../src/http/server.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { logSink } from '../helpers/log-sink.js';
import { CHROMIUM, openSignedIn, PAGE_ARTIFACTS } from '../helpers/page-browser.js';
import { waitFor } from '../helpers/wait.js';

const FILE = `
devices:
  - id: attic_fan
    name: Attic fan
    area: Attic
    entities:
      fan:
        kind: fan
        state_topic: t/fan
        value_path: state
        attributes: { percentage: percentage, preset_mode: preset }
        command_topic: t/fan/set
        command_format: json
        options: { preset_mode: [eco, boost] }
  - id: heater
    name: Heater
    area: Attic
    entities:
      program:
        kind: select
        name: Heater program
        state_topic: t/program
        command_topic: t/program/set
        options: { value: [eco, comfort, away] }
      limit:
        kind: number
        name: Heater limit
        unit: °C
        state_topic: t/limit
        command_topic: t/limit/set
        ranges: { value: { min: 10, max: 30, step: 1 } }
      reset:
        kind: button
        name: Heater reset
        command_topic: t/reset/set
`;

describe('card controls for fans, selects, numbers and buttons (headless Chromium)', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let sim: Simulator;
  let server: HttpServer;
  let context: BrowserContext;
  let page: Page;
  let watcher: MqttClient;
  const seen: Array<{ topic: string; payload: string }> = [];
  const dir = mkdtempSync(join(tmpdir(), 'hearth-controls-'));
  const card = (id: string) => page.locator(`.entity[data-entity="${id}"]`);
  const confirmed = (id: string) =>
    card(id)
      .locator('.control-status .outcome', { hasText: /^confirmed$/ })
      .waitFor({ timeout: 15_000 });
  const audited = (entity: string, action: string) =>
    waitFor(
      `${action} on ${entity} in the audit`,
      () =>
        hearth.audit.list({ limit: 50 }).find((r) => r.entityId === entity && r.action === action && r.principal === 'http:owner' && r.outcome === 'confirmed'),
      10_000,
    );

  before(async () => {
    assert.ok(CHROMIUM, 'Chromium is not installed');
    mkdirSync(PAGE_ARTIFACTS, { recursive: true });
    broker = await startAedes();
    writeFileSync(join(dir, 'kinds.yaml'), FILE);
    const { config } = loadConfig({
      cwd: dir,
      env: {},
      flags: { 'mqtt.url': broker.url, 'devices.paths': [dir], demo: false, 'database.path': join(dir, 'h.db') },
    });
    const logs = logSink('warn');
    hearth = await Hearth.open({ config, log: logs.log, recordHistory: true });
    hearth.policy.add({ subject: 'role:owner', targetType: 'any', target: '*', action: 'actuate', effect: 'allow' });
    sim = await startSimulator({ url: broker.url, devices: hearth.bridge.registry.devices(), log: logs.log });
    await hearth.bridge.settle(3000);
    server = await startHttpServer({ hearth, host: '127.0.0.1', port: 0, log: logs.log });
    const token = hearth.tokens.create('owner', 'http:owner').secret;
    hearth.policy.setRoles('http:owner', ['owner']);
    watcher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    watcher.on('message', (topic, payload) => seen.push({ topic, payload: payload.toString('utf8') }));
    await watcher.subscribeAsync('t/#', { qos: 0 });
    ({ context, page } = await openSignedIn(server.url, token, {
      profileDir: join(dir, 'profile'),
      viewport: { width: 1280, height: 900 },
      name: 'owner',
      hash: '#devices',
    }));
  });
  after(async () => {
    await context?.close().catch(() => undefined);
    await watcher?.endAsync(true).catch(() => undefined);
    await server?.close();
    await sim?.close();
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fan: on, speed slider, preset', async () => {
    await card('attic_fan.fan').locator('button.toggle').click();
    await confirmed('attic_fan.fan');
    await card('attic_fan.fan').locator('input[data-control="speed"]').fill('60');
    await waitFor('percentage 60 on the broker', () => seen.some((m) => m.topic === 't/fan' && JSON.parse(m.payload).percentage === 60), 10_000);
    await confirmed('attic_fan.fan');
    await card('attic_fan.fan').locator('select[data-control="preset"]').selectOption('boost');
    await card('attic_fan.fan').locator('button[data-control="preset-set"]').click();
    await waitFor('preset boost on the broker', () => seen.some((m) => m.topic === 't/fan' && JSON.parse(m.payload).preset === 'boost'), 10_000);
    await audited('attic_fan.fan', 'set_preset_mode');
  });

  it('select, number and button', async () => {
    await card('heater.program').locator('select[data-control="option"]').selectOption('away');
    await card('heater.program').locator('button[data-control="option-set"]').click();
    await confirmed('heater.program');
    assert.ok(
      seen.some((m) => m.topic === 't/program/set' && m.payload === 'away'),
      'the option was sent',
    );
    await audited('heater.program', 'select_option');
    await card('heater.limit').locator('input[data-control="number"]').fill('24');
    await card('heater.limit').locator('button[data-control="set-number"]').click();
    await confirmed('heater.limit');
    assert.ok(
      seen.some((m) => m.topic === 't/limit/set' && m.payload === '24'),
      'the value was sent',
    );
    await card('heater.reset').locator('button[data-control="press"]').click();
    await confirmed('heater.reset');
    assert.ok(
      seen.some((m) => m.topic === 't/reset/set'),
      'the press was sent',
    );
    await audited('heater.reset', 'press');
    await page.screenshot({ path: join(PAGE_ARTIFACTS, 'dash-11-more-kinds.png'), fullPage: true });
  });
});
