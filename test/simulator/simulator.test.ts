import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import mqtt, { type MqttClient } from 'mqtt';

import { commandTopicsOf, encodeCommand, type Command } from '../../src/devices/commands.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import { stateTopicsOf, type Device, type Entity } from '../../src/devices/model.js';
import { createLogger } from '../../src/log.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { brokerKinds, type TestBroker } from '../helpers/brokers.js';
import { clusterKinds, otherNodeUrl } from '../helpers/cluster-brokers.js';
import { waitFor } from '../helpers/wait.js';

const DEMO_DIR = fileURLToPath(new URL('../../devices/demo', import.meta.url));
const STEP_MS = 5_000;
const GARAGE_TRAVEL_MS = 2000;

/** The demo home, with the garage door sped up so the test stays fast. */
function demoHome(): Device[] {
  const { devices, problems } = loadDeviceFiles([DEMO_DIR]);
  assert.deepEqual(problems, []);
  assert.ok(devices.length >= 6, 'the demo home loads');
  return devices.map((d) =>
    d.id !== 'garage_door'
      ? d
      : { ...d, entities: d.entities.map((e) => (e.kind === 'cover' ? { ...e, simulate: { ...e.simulate, travel_ms: GARAGE_TRAVEL_MS } } : e)) },
  );
}

function entity(devices: Device[], id: string): Entity {
  const found = devices.flatMap((d) => d.entities).find((e) => e.id === id);
  assert.ok(found, `entity ${id} exists in the demo home`);
  return found;
}

async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface Seen {
  topic: string;
  payload: Buffer;
  text: string;
  retain: boolean;
}

/** An mqtt.js client subscribed to hearth-demo/# that keeps every message it sees. */
class Observer {
  readonly seen: Seen[] = [];
  private waiters = new Set<() => void>();

  private constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload, packet) => {
      this.seen.push({ topic, payload, text: payload.toString('utf8'), retain: packet.retain });
      for (const w of [...this.waiters]) w();
    });
  }

  static async connect(url: string, filters = ['hearth-demo/#'], qos: 0 | 1 = 1): Promise<Observer> {
    const client = mqtt.connect(url, { protocolVersion: 4, clientId: `observer-${process.pid}-${Date.now()}`, reconnectPeriod: 0 });
    const observer = new Observer(client);
    try {
      await within(
        STEP_MS,
        'the observer to connect',
        new Promise((resolve, reject) => {
          client.once('connect', resolve);
          client.once('error', reject);
        }),
      );
      await within(STEP_MS, 'the observer to subscribe', client.subscribeAsync(filters, { qos }));
    } catch (err) {
      client.end(true);
      throw err;
    }
    return observer;
  }

  /** Where "from now on" starts. */
  mark(): number {
    return this.seen.length;
  }

  /** The first message from `since` on that matches; fails after `ms`. */
  waitFor(what: string, match: (m: Seen) => boolean, since = 0, ms = STEP_MS): Promise<Seen> {
    let check: (() => void) | undefined;
    const found = new Promise<Seen>((resolve) => {
      check = () => {
        const hit = this.seen.slice(since).find(match);
        if (hit) resolve(hit);
      };
      this.waiters.add(check);
      check();
    });
    return within(ms, what, found).finally(() => this.waiters.delete(check!));
  }

  since(mark: number, topic?: string): Seen[] {
    return this.seen.slice(mark).filter((m) => topic === undefined || m.topic === topic);
  }

  async send(e: Entity, cmd: Command): Promise<void> {
    for (const m of encodeCommand(e, cmd)) await this.client.publishAsync(m.topic, m.payload, { qos: 1 });
  }

  async sendRaw(topic: string, payload: string): Promise<void> {
    await this.client.publishAsync(topic, payload, { qos: 1 });
  }

  close(): Promise<void> {
    return this.client.endAsync(true);
  }
}

function json(m: Seen): Record<string, unknown> | undefined {
  try {
    return JSON.parse(m.text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Every topic the demo devices use (availability, state, attributes, commands). */
function everyTopic(devices: Device[]): string[] {
  const entities = devices.flatMap((d) => d.entities);
  return [...new Set([...availabilityTopics(devices), ...entities.flatMap(stateTopicsOf), ...entities.flatMap(commandTopicsOf)])];
}

function availabilityTopics(devices: Device[]): string[] {
  return [...new Set(devices.flatMap((d) => [d.availability, ...d.entities.map((e) => e.availability)]).flatMap((a) => a?.sources.map((s) => s.topic) ?? []))];
}

// And on the clustered brokers (#34): NATS (3 nodes) and RabbitMQ.
for (const { kind, start } of [...brokerKinds, ...clusterKinds]) {
  describe(`simulator on ${kind}`, { timeout: 60_000 }, () => {
    const devices = demoHome();
    const lamp = entity(devices, 'living_room_lamp.lamp');
    const kitchen = entity(devices, 'kitchen_light.light');
    const lock = entity(devices, 'front_door.lock');
    const thermostat = entity(devices, 'thermostat.climate');
    const garage = entity(devices, 'garage_door.door');
    const garageAvailability = garage.availability!.sources[0]!.topic;
    const logLines: string[] = [];
    const log = createLogger({ level: 'debug', destination: { write: (line: string) => void logLines.push(line) } });
    const warnings = () => logLines.map((l) => JSON.parse(l) as { level: number; msg: string; entity?: string }).filter((l) => l.level === 40);

    let broker: TestBroker | undefined;
    let sim: Simulator | undefined;
    let observer: Observer | undefined;

    before(async () => {
      broker = await start();
      sim = await within(15_000, 'the simulator to start', startSimulator({ url: broker.url, devices, log }));
      // On a cluster the observer is on another node than the devices. RabbitMQ 3.10 replays a retained message
      // only to a subscription that names its topic exactly (none to a wildcard): there it names every topic.
      // On NATS a QoS 1 subscription is delivered through a JetStream consumer, which a busy machine can hold up
      // for seconds; the observer takes QoS 0 (core NATS), as Hearth itself subscribes.
      observer = await Observer.connect(otherNodeUrl(broker), kind === 'rabbitmq' ? everyTopic(devices) : undefined, kind === 'nats' ? 0 : 1);
    });

    after(async () => {
      await observer?.close().catch(() => undefined);
      await sim?.close().catch(() => undefined);
      await broker?.stop();
    });

    it('simulates every demo device', () => {
      assert.deepEqual([...sim!.deviceIds].sort(), devices.map((d) => d.id).sort());
      assert.deepEqual(sim!.state('front_door.lock'), { value: 'locked' });
      assert.deepEqual(sim!.state('garage_door.door'), { value: 'closed', position: 0 });
      assert.equal(sim!.state('thermostat.climate').value, 'heat');
      assert.equal(sim!.state('thermostat.climate').temperature, 20.5);
      assert.throws(() => sim!.state('nope.nothing'));
    });

    it('has every device online and every sensor and camera reading retained on start', async () => {
      for (const topic of availabilityTopics(devices)) {
        const m = await observer!.waitFor(`${topic} online`, (m) => m.topic === topic);
        assert.equal(m.text, 'online', topic);
        assert.equal(m.retain, true, `${topic} is retained`);
      }
      const readers = devices.flatMap((d) => d.entities).filter((e) => ['sensor', 'binary_sensor', 'camera'].includes(e.kind));
      assert.ok(readers.length >= 4);
      for (const e of readers) {
        const m = await observer!.waitFor(`${e.id} state`, (m) => m.topic === e.stateTopic && m.retain);
        if (e.kind === 'camera') {
          assert.deepEqual([...m.payload.subarray(0, 3)], [0xff, 0xd8, 0xff], 'a JPEG frame');
        } else {
          const value = json(m)?.[e.valuePath!];
          if (e.kind === 'binary_sensor') assert.equal(typeof value, 'boolean', `${e.id} is a JSON boolean`);
          else assert.equal(typeof value, 'number', `${e.id} is a number`);
        }
      }
      // Temperature and humidity share one document.
      const climate = await observer!.waitFor('living room climate', (m) => m.topic === 'hearth-demo/living_room_climate');
      assert.deepEqual(Object.keys(json(climate)!).sort(), ['humidity', 'temperature']);
      // Actuators report their initial state too.
      const lockState = await observer!.waitFor('lock state', (m) => m.topic === lock.stateTopic);
      assert.equal(lockState.text, 'LOCKED');
      const thermo = await observer!.waitFor('thermostat state', (m) => m.topic === thermostat.stateTopic);
      assert.deepEqual({ ...json(thermo), current: undefined }, { mode: 'heat', target: 20.5, current: undefined, action: 'heating' });
    });

    it('switches the lamp', async () => {
      let mark = observer!.mark();
      await observer!.send(lamp, { action: 'turn_on' });
      await observer!.waitFor('lamp ON', (m) => m.topic === lamp.stateTopic && m.text === 'ON', mark);
      assert.deepEqual(sim!.state(lamp.id), { value: 'on' });
      mark = observer!.mark();
      await observer!.send(lamp, { action: 'turn_off' });
      await observer!.waitFor('lamp OFF', (m) => m.topic === lamp.stateTopic && m.text === 'OFF', mark);
    });

    it('dims the kitchen light, keeping brightness and colour across off and on', async () => {
      const white = { x: 0.3127, y: 0.329 };
      // It starts as a warm white by colour temperature (370 mireds, 2700 K).
      const warm = { color: white, color_temp: 370, color_mode: 'color_temp' };
      let mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_on', brightness: 100 });
      const on = await observer!.waitFor('kitchen ON 100', (m) => m.topic === kitchen.stateTopic, mark);
      assert.deepEqual(json(on), { state: 'ON', brightness: 100, ...warm });

      mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_off' });
      const off = await observer!.waitFor('kitchen OFF', (m) => m.topic === kitchen.stateTopic, mark);
      assert.deepEqual(json(off), { state: 'OFF', brightness: 100, ...warm });

      mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_on' });
      const again = await observer!.waitFor('kitchen ON again', (m) => m.topic === kitchen.stateTopic, mark);
      assert.deepEqual(json(again), { state: 'ON', brightness: 100, ...warm });

      // A colour arrives as CIE xy and is reported back the same.
      mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_on', color: 'red' });
      const red = await observer!.waitFor('kitchen red', (m) => m.topic === kitchen.stateTopic, mark);
      assert.deepEqual(json(red), { state: 'ON', brightness: 100, color: { x: 0.6401, y: 0.33 }, color_temp: 370, color_mode: 'xy' });
      // A colour temperature arrives as mireds, and puts the light back in colour-temperature mode.
      mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_on', color_temp: 5000 });
      const cool = await observer!.waitFor('kitchen cool white', (m) => m.topic === kitchen.stateTopic, mark);
      assert.deepEqual(json(cool), { state: 'ON', brightness: 100, color: { x: 0.6401, y: 0.33 }, color_temp: 200, color_mode: 'color_temp' });
      mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_on', color: 'white' });
      await observer!.waitFor('kitchen white', (m) => m.topic === kitchen.stateTopic, mark);
    });

    it('unlocks the front door: UNLOCKING, then UNLOCKED', async () => {
      const mark = observer!.mark();
      await observer!.send(lock, { action: 'unlock' });
      await observer!.waitFor('UNLOCKED', (m) => m.topic === lock.stateTopic && m.text === 'UNLOCKED', mark);
      assert.deepEqual(
        observer!.since(mark, lock.stateTopic).map((m) => m.text),
        ['UNLOCKING', 'UNLOCKED'],
      );
      assert.deepEqual(sim!.state(lock.id), { value: 'unlocked' });
    });

    it('sets the thermostat target', async () => {
      const mark = observer!.mark();
      await observer!.send(thermostat, { action: 'set_temperature', temperature: 22 });
      const m = await observer!.waitFor('target 22', (m) => m.topic === thermostat.stateTopic && json(m)?.target === 22, mark);
      assert.equal(json(m)?.mode, 'heat');
      assert.equal(sim!.state(thermostat.id).temperature, 22);
    });

    it('ignores impossible and malformed commands, like a real device', async () => {
      const warned = warnings().length;
      const mark = observer!.mark();
      await observer!.send(kitchen, { action: 'turn_on', brightness: 999 });
      await observer!.send(thermostat, { action: 'set_mode', mode: 'party' });
      await observer!.sendRaw(lamp.commandTopic!, 'BANANA');
      // Each device has handled its command once it has said it ignored it (an echo would have gone out by then).
      const ignoredSoFar = () =>
        warnings()
          .slice(warned)
          .filter((w) => w.msg === 'command ignored').length;
      await waitFor('the three commands handled', () => ignoredSoFar() >= 3, STEP_MS);
      assert.deepEqual(observer!.since(mark, kitchen.stateTopic), [], 'no echo from the kitchen light');
      assert.deepEqual(observer!.since(mark, lamp.stateTopic), [], 'no echo from the lamp');
      // The thermostat reports on a timer, so only its mode is checked.
      assert.ok(
        observer!.since(mark, thermostat.stateTopic).every((m) => json(m)?.mode === 'heat'),
        'no party mode',
      );
      assert.equal(sim!.state(kitchen.id).brightness, 100);
      assert.equal(sim!.state(thermostat.id).value, 'heat');
      const ignored = warnings()
        .slice(warned)
        .filter((w) => w.msg === 'command ignored')
        .map((w) => w.entity)
        .sort();
      assert.deepEqual(ignored, [kitchen.id, lamp.id, thermostat.id].sort());
    });

    it('goes offline by last will when its socket drops, and online again on restart', async () => {
      let mark = observer!.mark();
      await sim!.stopDevice('garage_door');
      await observer!.waitFor('garage offline', (m) => m.topic === garageAvailability && m.text === 'offline', mark);
      // No other device dropped out.
      assert.deepEqual(
        observer!
          .since(mark)
          .filter((m) => m.text === 'offline')
          .map((m) => m.topic),
        [garageAvailability],
      );

      mark = observer!.mark();
      await sim!.startDevice('garage_door');
      await observer!.waitFor('garage online', (m) => m.topic === garageAvailability && m.text === 'online', mark);
      const state = await observer!.waitFor('garage state again', (m) => m.topic === garage.stateTopic, mark);
      assert.equal(state.text, 'closed');
    });

    it('opens the garage door over its travel time', async () => {
      const positionTopic = garage.attributes.position!.topic!;
      let mark = observer!.mark();
      await observer!.send(garage, { action: 'open' });
      await observer!.waitFor('garage open', (m) => m.topic === garage.stateTopic && m.text === 'open', mark, GARAGE_TRAVEL_MS + STEP_MS);
      await observer!.waitFor('position 100', (m) => m.topic === positionTopic && m.text === '100', mark);
      const states = observer!.since(mark, garage.stateTopic).map((m) => m.text);
      assert.equal(states[0], 'opening');
      assert.equal(states.at(-1), 'open');
      const positions = observer!.since(mark, positionTopic).map((m) => Number(m.text));
      assert.ok(
        positions.some((p) => p > 0 && p < 100),
        `an intermediate position in ${positions.join(', ')}`,
      );
      assert.deepEqual(
        positions,
        [...positions].sort((a, b) => a - b),
        'positions only rise',
      );
      assert.deepEqual(sim!.state(garage.id), { value: 'open', position: 100 });

      mark = observer!.mark();
      await observer!.send(garage, { action: 'set_position', position: 40 });
      await observer!.waitFor('position 40', (m) => m.topic === positionTopic && m.text === '40', mark);
      await observer!.waitFor('open at 40', (m) => m.topic === garage.stateTopic && m.text === 'open', mark);
      assert.equal(observer!.since(mark, garage.stateTopic)[0]?.text, 'closing');

      mark = observer!.mark();
      await observer!.send(garage, { action: 'close' });
      // Stopped once it is on its way (40% of its travel, 800 ms, to stop it in): a fixed wait let a loaded
      // machine's door reach the bottom first.
      await observer!.waitFor('closing', (m) => m.topic === garage.stateTopic && m.text === 'closing', mark);
      await observer!.send(garage, { action: 'stop' });
      await observer!.waitFor('stopped', (m) => m.topic === garage.stateTopic && m.text === 'stopped', mark);
      const stopped = sim!.state(garage.id);
      assert.equal(stopped.value, 'stopped');
      // Halted on its way down: above the bottom, never above where it set off from.
      assert.ok((stopped.position as number) > 0 && (stopped.position as number) <= 40, `stopped at ${stopped.position}`);
    });

    it('says offline for every device on close', async () => {
      const mark = observer!.mark();
      await within(STEP_MS, 'the simulator to close', sim!.close());
      for (const topic of availabilityTopics(devices)) {
        const m = await observer!.waitFor(`${topic} offline`, (m) => m.topic === topic && m.text === 'offline', mark);
        assert.equal(m.text, 'offline');
      }
    });
  });
}
