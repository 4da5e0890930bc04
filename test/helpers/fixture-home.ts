// A test file's Hearth (in-process) on a fixture home: a broker (mosquitto unless told), what puts the home on it
// (a simulated Zigbee2MQTT, a Home Assistant discovery home's retained configs, a forged list), a real SQLite file
// in a folder of its own, and a Hearth opened once the home's devices are all in its registry. Started in a
// before() hook of the enclosing describe, closed in an after() hook; `open()` opens a Hearth again on the same
// database (a restart, after `home.hearth.close()`), and `home.hearth` is always the one opened last.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { Hearth } from '../../src/hearth.js';
import { startMosquitto, type TestBroker } from './brokers.js';
import { openHearth } from './home.js';
import { late } from './late.js';
import { logSink } from './log-sink.js';
import { HOMES, SimulatedZigbee2mqtt, type Z2mHomeFixture } from './simulated-zigbee2mqtt.js';
import { started } from './use-home.js';
import { waitFor } from './wait.js';

export interface FixtureHomeOptions<S extends { close(): Promise<unknown> }> {
  /** The start of the folder's name, under the system's temporary folder. */
  name: string;
  /** Which broker to start (mosquitto unless told). */
  broker?: () => Promise<TestBroker>;
  /** Puts the home on the broker before Hearth first opens (given the folder, for a database made beforehand). */
  source: (broker: TestBroker, dir: string) => Promise<S>;
  /** How many devices the registry holds once the home is in (what `open()` waits for unless told). */
  devices: number;
  /** Hearth's settings (openHearth's flags). */
  flags?: Record<string, string | string[] | boolean>;
  /** How long a home may take to arrive (waitFor's deadline, stretched as every wait is). */
  waitMs?: number;
}

export interface FixtureHome<S> {
  broker: TestBroker;
  /** What put the home on the broker (closed after the tests, before the broker stops). */
  source: S;
  /** The Hearth opened last. */
  hearth: Hearth;
  dir: string;
  /** Hearth's log at warn and above. */
  logs: ReturnType<typeof logSink>;
  /** Opens a Hearth on the folder's database and waits until its registry holds `devices` devices. */
  open(devices?: number): Promise<Hearth>;
  /** Runs `fn` after the file's tests, before Hearth closes (the last registered first). */
  cleanup(fn: () => unknown): void;
}

export function useFixtureHome<S extends { close(): Promise<unknown> }>(options: FixtureHomeOptions<S>): FixtureHome<S> {
  const dir = mkdtempSync(join(tmpdir(), `hearth-${options.name}-`));
  const logs = logSink('warn');
  const cleanups: Array<() => unknown> = [];
  let running: FixtureHome<S> | undefined;
  let broker: TestBroker | undefined;
  let source: S | undefined;
  let hearth: Hearth | undefined;
  const open = async (devices = options.devices) => {
    const opened = await openHearth(started(broker, 'the broker').url, dir, logs.log, options.flags);
    hearth = opened;
    await waitFor(`the home's ${devices} devices`, () => opened.bridge.registry.devices().length === devices, options.waitMs);
    return opened;
  };
  before(async () => {
    broker = await (options.broker ?? startMosquitto)();
    source = await options.source(broker, dir);
    await open();
    running = {
      broker,
      source,
      dir,
      logs,
      open,
      cleanup: (fn) => void cleanups.push(fn),
      get hearth() {
        return started(hearth, 'the Hearth');
      },
    };
  });
  after(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
    await hearth?.close();
    await source?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return late(() => started(running, 'the fixture home'));
}

/** Puts a Zigbee2MQTT home on the broker (the fixture home unless told): a simulated Zigbee2MQTT publishing it. */
export const zigbee2mqttSource = (home?: Z2mHomeFixture) => (broker: TestBroker) => SimulatedZigbee2mqtt.start(broker.url, home);

/** A Home Assistant discovery home: each device's retained discovery configs and the states they report. */
export interface DiscoveryHomeFixture {
  configs: Array<{ topic: string; payload: Record<string, unknown> }>;
  states: Record<string, unknown>;
}

/** test/fixtures/homes/<file> (homeassistant-home.json unless told). */
export function discoveryHome(file = 'homeassistant-home.json'): DiscoveryHomeFixture {
  return JSON.parse(readFileSync(join(HOMES, file), 'utf8')) as DiscoveryHomeFixture;
}

/** A state as its device publishes it: a string as it is, anything else as JSON. */
export const statePayload = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** The devices of a discovery home on the broker: one MQTT 5 client that publishes the configs and the states, retained. */
export interface DiscoveryPublisher {
  client: MqttClient;
  close(): Promise<void>;
}

export async function publishDiscoveryHome(url: string, home: DiscoveryHomeFixture): Promise<DiscoveryPublisher> {
  const client = await mqtt.connectAsync(url, { protocolVersion: 5 });
  for (const c of home.configs) await client.publishAsync(c.topic, JSON.stringify(c.payload), { retain: true, qos: 1 });
  for (const [topic, state] of Object.entries(home.states)) await client.publishAsync(topic, statePayload(state), { retain: true, qos: 1 });
  return { client, close: () => client.endAsync() };
}

/** Puts a discovery home on the broker (test/fixtures/homes/homeassistant-home.json unless told). */
export const discoverySource = (home: DiscoveryHomeFixture) => (broker: TestBroker) => publishDiscoveryHome(broker.url, home);
