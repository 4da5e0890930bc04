// A small Zigbee2MQTT on a real broker, for tests of real homes: it publishes what Zigbee2MQTT publishes
// (retained bridge/info, bridge/state, bridge/devices and each device's state on <prefix>/<friendly name>),
// answers <friendly name>/set with the device's new state and /get with the asked keys, and renames a device as
// Zigbee2MQTT's bridge/request/device/rename does (a new bridge/devices, the state on the new topic). Friendly
// names may hold slashes (`Living room/Ceiling light`), as Zigbee2MQTT allows.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';

export interface Z2mHomeFixture {
  info: Record<string, unknown>;
  devices: Array<{ ieee_address: string; friendly_name: string; [k: string]: unknown }>;
  states: Record<string, Record<string, unknown>>;
}

export const HOMES = join(import.meta.dirname, '..', 'fixtures', 'homes');

/** test/fixtures/homes/zigbee2mqtt-home.json (written by make-zigbee2mqtt-home.ts from zigbee-herdsman-converters). */
export function zigbee2mqttHome(): Z2mHomeFixture {
  return JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-home.json'), 'utf8')) as Z2mHomeFixture;
}

export class SimulatedZigbee2mqtt {
  readonly received: Array<{ topic: string; payload: string }> = [];
  private readonly devices: Z2mHomeFixture['devices'];
  private readonly states = new Map<string, Record<string, unknown>>();

  private constructor(
    readonly client: MqttClient,
    readonly home: Z2mHomeFixture,
    readonly prefix: string,
  ) {
    this.devices = home.devices.map((d) => ({ ...d }));
    for (const [name, state] of Object.entries(home.states)) this.states.set(name, { ...state });
    client.on('message', (topic, payload) => this.onMessage(topic, payload.toString('utf8')));
  }

  static async start(url: string, home = zigbee2mqttHome(), prefix = 'zigbee2mqtt'): Promise<SimulatedZigbee2mqtt> {
    const client = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 100, clientId: `z2m-sim-${process.pid}-${Date.now()}` });
    const sim = new SimulatedZigbee2mqtt(client, home, prefix);
    await client.subscribeAsync([`${prefix}/#`], { qos: 1 });
    await sim.publish(`${prefix}/bridge/state`, { state: 'online' });
    await sim.publish(`${prefix}/bridge/info`, home.info);
    await sim.publishDevices();
    for (const [name, state] of sim.states) await sim.publish(`${prefix}/${name}`, state);
    return sim;
  }

  private publish(topic: string, payload: unknown): Promise<unknown> {
    return this.client.publishAsync(topic, JSON.stringify(payload), { retain: true, qos: 1 });
  }

  private publishDevices(): Promise<unknown> {
    return this.publish(`${this.prefix}/bridge/devices`, this.devices);
  }

  private onMessage(topic: string, payload: string): void {
    if (!topic.startsWith(`${this.prefix}/`)) return;
    const rest = topic.slice(this.prefix.length + 1);
    if (rest === 'bridge/request/device/rename') {
      const body = JSON.parse(payload) as { from: string; to: string };
      void this.rename(body.from, body.to);
      return;
    }
    const m = /^(.+)\/(set|get)$/.exec(rest);
    if (!m || !this.states.has(m[1]!)) return;
    this.received.push({ topic, payload });
    const name = m[1]!;
    const current = { ...this.states.get(name)! };
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(payload) as Record<string, unknown>;
    } catch {
      return;
    }
    if (m[2] === 'get') {
      for (const key of Object.keys(body)) current[key] ??= key.startsWith('state') ? 'OFF' : null;
    } else {
      // A brightness given alone turns a light on, as Zigbee2MQTT reports it.
      Object.assign(current, body);
      if (typeof body.brightness === 'number' && body.state === undefined && 'state' in current) current.state = body.brightness > 0 ? 'ON' : 'OFF';
      if (body.state === 'OPEN') current.position = 100;
      if (body.state === 'CLOSE') current.position = 0;
      if (typeof body.position === 'number') current.state = body.position > 0 ? 'OPEN' : 'CLOSE';
      if (body.state === 'LOCK') current.lock_state = 'locked';
      if (body.state === 'UNLOCK') current.lock_state = 'unlocked';
    }
    this.states.set(name, current);
    void this.publish(`${this.prefix}/${name}`, current);
  }

  /** Rename a device as Zigbee2MQTT does: the list changes, the old topic is cleared, the state moves. */
  async rename(from: string, to: string): Promise<void> {
    const device = this.devices.find((d) => d.friendly_name === from);
    if (!device) throw new Error(`no device ${from}`);
    device.friendly_name = to;
    const state = this.states.get(from) ?? {};
    this.states.delete(from);
    this.states.set(to, state);
    await this.client.publishAsync(`${this.prefix}/${from}`, '', { retain: true, qos: 1 });
    await this.publishDevices();
    await this.publish(`${this.prefix}/${to}`, state);
  }

  /** What arrived on a device's /set topic, oldest first. */
  sets(friendlyName: string): string[] {
    return this.received.filter((r) => r.topic === `${this.prefix}/${friendlyName}/set`).map((r) => r.payload);
  }

  state(friendlyName: string): Record<string, unknown> | undefined {
    return this.states.get(friendlyName);
  }

  async close(): Promise<void> {
    await this.client.endAsync(true).catch(() => undefined);
  }
}
