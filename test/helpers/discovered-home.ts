// A Hearth on a real broker (aedes) with a real SQLite file, and a fake device
// on the same broker that announces discovery configs, records every command
// it receives and answers the way its script says (the state a real device
// reports, or nothing). For the tests of device kinds from discovery.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import type { Entity } from '../../src/devices/model.js';
import type { Hearth } from '../../src/hearth.js';
import type { ToolResultObject } from '../../src/tools/types.js';
import { startAedes, type TestBroker } from './brokers.js';
import { actuatorTool, OWNER, openHearth } from './home.js';
import { logSink } from './log-sink.js';
import { waitFor } from './wait.js';

/** What the fake device does with a command: publish these [topic, payload] messages (or nothing). */
export type Responder = (topic: string, payload: string) => Array<[string, string]> | undefined;

export interface DiscoveredHome {
  hearth: Hearth;
  device: MqttClient;
  logs: ReturnType<typeof logSink>;
  /** Commands the device received since the last `clear()`. */
  received: Array<{ topic: string; payload: string }>;
  clear(): void;
  /** Publish (retained, as real devices and bridges do). */
  publish(topic: string, payload: unknown): Promise<void>;
  /** The entity discovered with this name. */
  entity(name: string): Entity;
  /** Call the entity's own tool as an owner. */
  call(name: string, args: Record<string, unknown>): Promise<ToolResultObject>;
  close(): Promise<void>;
}

export async function openDiscoveredHome(options: {
  listen: string[];
  respond?: Responder;
  flags?: Record<string, string | boolean>;
}): Promise<DiscoveredHome> {
  const broker: TestBroker = await startAedes();
  const dir = mkdtempSync(join(tmpdir(), 'hearth-kinds-'));
  const logs = logSink('debug');
  const hearth = await openHearth(broker.url, dir, logs.log, options.flags ?? {});
  const device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
  const received: Array<{ topic: string; payload: string }> = [];
  device.on('message', (topic, payload) => {
    const text = payload.toString('utf8');
    received.push({ topic, payload: text });
    for (const [t, p] of options.respond?.(topic, text) ?? []) void device.publishAsync(t, p, { retain: true, qos: 1 });
  });
  if (options.listen.length) await device.subscribeAsync(options.listen, { qos: 1 });
  const find = (name: string) => hearth.bridge.registry.entities().find((e) => e.name === name);
  return {
    hearth,
    device,
    logs,
    received,
    clear: () => {
      received.length = 0;
    },
    publish: async (topic, payload) => {
      await device.publishAsync(topic, typeof payload === 'string' ? payload : JSON.stringify(payload), { retain: true, qos: 1 });
    },
    entity: (name) => {
      const e = find(name);
      assert.ok(
        e,
        `${name} is discovered: ${hearth.bridge.registry
          .entities()
          .map((x) => x.name)
          .join(', ')}`,
      );
      return e;
    },
    call: async (name, args) => {
      const e = await waitFor(`${name} to be discovered`, () => find(name));
      return hearth.tools.call(actuatorTool(hearth, e.id).name, args, OWNER);
    },
    close: async () => {
      await device.endAsync(true).catch(() => undefined);
      await hearth.close();
      await broker.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
