// Zigbee2MQTT's own conversions, run on real zigbee-herdsman-converters definitions: a `/set` payload handed to the
// definition's toZigbee converters the way Zigbee2MQTT's publish extension does it (key by key, the endpoint from a
// `_<endpoint>` suffix, each converter once, "No converter available" for a key none takes), recording the Zigbee
// commands, writes and reads they send; and a Zigbee message handed to its fromZigbee converters the way Zigbee2MQTT
// turns a report into the state it publishes. Only the devices' radio is simulated: an endpoint that records.
import * as zhc from 'zigbee-herdsman-converters';
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';
import { z2mEntryOf } from './zigbee2mqtt.js';

type Definition = ReturnType<typeof zhc.prepareDefinition>;
type KeyValue = Record<string, unknown>;

/** One thing a converter sent over the air. */
export type ZigbeeCall =
  | { endpoint: number; type: 'command'; cluster: string; command: string; payload: KeyValue }
  | { endpoint: number; type: 'write'; cluster: string; attributes: KeyValue }
  | { endpoint: number; type: 'read'; cluster: string; attributes: unknown[] };

/** What Zigbee2MQTT logs and skips: a key no converter takes, a converter that threw. */
export interface Z2mError {
  key: string;
  error: string;
}

/** The vendor file of zigbee-herdsman-converters a model is in (devices/<file>.js): loading one file is fast. */
export async function loadDefinition(vendorFile: string, model: string): Promise<Definition> {
  const mod = (await import(`zigbee-herdsman-converters/devices/${vendorFile}`)) as { definitions?: unknown[]; default?: { definitions?: unknown[] } };
  const defs = mod.definitions ?? mod.default?.definitions ?? [];
  const raw = defs.find((d) => (d as { model?: string }).model === model);
  if (!raw) throw new Error(`zigbee-herdsman-converters devices/${vendorFile} has no model ${model}`);
  return zhc.prepareDefinition(raw as Parameters<typeof zhc.prepareDefinition>[0]);
}

// The converters tell an endpoint from a device by the class's name, as zigbee-herdsman's own classes are named.
class Endpoint {
  readonly clusters: Record<string, { attributes: KeyValue }> = {};
  readonly meta: KeyValue = {};
  readonly binds: unknown[] = [];
  readonly configuredReportings: unknown[] = [];
  constructor(
    readonly ID: number,
    private readonly device: Device,
    private readonly calls: ZigbeeCall[],
  ) {}
  get deviceIeeeAddress(): string {
    return this.device.ieeeAddr;
  }
  getDevice(): Device {
    return this.device;
  }
  async command(cluster: string, command: string, payload: KeyValue): Promise<void> {
    this.calls.push({ endpoint: this.ID, type: 'command', cluster, command, payload: { ...payload } });
  }
  async write(cluster: string, attributes: KeyValue): Promise<void> {
    this.calls.push({ endpoint: this.ID, type: 'write', cluster, attributes: { ...attributes } });
  }
  async read(cluster: string, attributes: unknown[]): Promise<KeyValue> {
    this.calls.push({ endpoint: this.ID, type: 'read', cluster, attributes: [...attributes] });
    return {};
  }
  supportsInputCluster(): boolean {
    return true;
  }
  supportsOutputCluster(): boolean {
    return false;
  }
  getClusterAttributeValue(cluster: string, attribute: string): unknown {
    return this.clusters[cluster]?.attributes[attribute];
  }
  saveClusterAttributeKeyValue(cluster: string, values: KeyValue): void {
    this.clusters[cluster] ??= { attributes: {} };
    Object.assign(this.clusters[cluster].attributes, values);
  }
}

class Device {
  readonly endpoints: Endpoint[] = [];
  readonly meta: KeyValue = {};
  readonly customClusters = {};
  readonly type = 'Router';
  constructor(
    readonly ieeeAddr: string,
    readonly modelID: string,
    readonly manufacturerName: string,
  ) {}
  getEndpoint(id: number): Endpoint | undefined {
    return this.endpoints.find((e) => e.ID === id);
  }
  save(): void {}
}

/** A device on the Zigbee network as Zigbee2MQTT sees it: its definition, endpoints, and the state it publishes. */
export class SimulatedZigbeeDevice {
  readonly calls: ZigbeeCall[] = [];
  readonly errors: Z2mError[] = [];
  /** What Zigbee2MQTT publishes on zigbee2mqtt/<friendly name>. */
  state: KeyValue;
  readonly zh: Device;
  private readonly names: Record<string, number>;

  constructor(
    readonly definition: Definition,
    readonly entry: Z2mDevice,
    state: KeyValue = {},
  ) {
    this.state = { ...state };
    this.zh = new Device(entry.ieee_address ?? '', definition.model, definition.vendor);
    this.names = (definition.endpoint?.(this.zh as never) as Record<string, number> | undefined) ?? {};
    const ids = new Set([1, ...Object.values(this.names)]);
    for (const id of [...ids].sort((a, b) => a - b)) this.zh.endpoints.push(new Endpoint(id, this.zh, this.calls));
  }

  /** The names Zigbee2MQTT lets a key end with (`state_left`): the definition's endpoint names. */
  private endpointNames(): string[] {
    return Object.keys(this.names);
  }

  /** By name (`left`), by id (`2`, as in a <device>/2/set topic), or the default one. */
  private endpoint(name: string | undefined): Endpoint {
    const id = name === undefined ? (this.names.default ?? this.zh.endpoints[0]!.ID) : /^\d+$/.test(name) ? Number(name) : this.names[name];
    const ep = id === undefined ? undefined : this.zh.getEndpoint(id);
    if (!ep) throw new Error(`${this.definition.model} has no endpoint ${name}`);
    return ep;
  }

  /**
   * A message on zigbee2mqtt/<friendly name>/set (or <friendly name>/<endpoint>/set: `topicEndpoint`), as
   * Zigbee2MQTT's publish extension handles it: the Zigbee it sends
   * (also in `calls`), the keys it could not convert (also in `errors`), and the state it publishes optimistically
   * (merged into `state`).
   */
  set(payload: string, topicEndpoint?: string): Promise<{ calls: ZigbeeCall[]; errors: Z2mError[]; published: KeyValue }> {
    return this.publish('set', payload, topicEndpoint);
  }

  /** A message on zigbee2mqtt/<friendly name>/get: each key's converter reads (convertGet), or the key is an error. */
  get(payload: string): Promise<{ calls: ZigbeeCall[]; errors: Z2mError[] }> {
    return this.publish('get', payload);
  }

  private async publish(
    type: 'set' | 'get',
    payload: string,
    topicEndpoint?: string,
  ): Promise<{ calls: ZigbeeCall[]; errors: Z2mError[]; published: KeyValue }> {
    const firstCall = this.calls.length;
    const firstError = this.errors.length;
    let message: KeyValue;
    try {
      message = JSON.parse(payload) as KeyValue;
    } catch {
      // A bare word is taken as the state only for these words.
      if (!['on', 'off', 'toggle', 'open', 'close', 'stop', 'lock', 'unlock'].includes(payload.toLowerCase())) {
        this.errors.push({ key: '(payload)', error: `Invalid message '${payload}', skipping...` });
        return { calls: [], errors: this.errors.slice(firstError), published: {} };
      }
      message = { state: payload };
    }
    // A bulb that is off gets its state and brightness first, one that is on gets them last.
    const entries = Object.entries(message);
    const sorter = typeof message.state === 'string' && message.state.toLowerCase() === 'off' ? 1 : -1;
    entries.sort((a) => (['state', 'brightness', 'brightness_percent'].includes(a[0]) ? sorter : sorter * -1));
    const names = this.endpointNames();
    const suffix = names.length ? new RegExp(`^(.*?)_(${names.join('|')})$`) : undefined;
    const used = new Map<number, unknown[]>();
    const published: KeyValue = {};
    for (const [wholeKey, value] of entries) {
      let key = wholeKey;
      let endpointName = topicEndpoint;
      const m = suffix?.exec(key);
      if (m) {
        key = m[1]!;
        endpointName = m[2]!;
      }
      const target = this.endpoint(endpointName);
      const converter = this.definition.toZigbee.find(
        (c) => (!c.key || c.key.includes(key)) && (!c.endpoints || (endpointName !== undefined && c.endpoints.includes(endpointName))),
      );
      const once = used.get(target.ID) ?? [];
      used.set(target.ID, once);
      // A converter sets once for all its keys (state and brightness together); reads are per key.
      if (type === 'set' && converter && once.includes(converter)) continue;
      if (!converter) {
        this.errors.push({ key: wholeKey, error: `No converter available for '${key}' (${JSON.stringify(value)})` });
        continue;
      }
      if (!(type === 'set' ? converter.convertSet : converter.convertGet)) {
        this.errors.push({ key: wholeKey, error: `No converter available for '${type}' '${key}' (${JSON.stringify(value)})` });
        continue;
      }
      const meta = {
        endpoint_name: endpointName,
        options: {},
        message: { ...message },
        device: this.zh,
        state: this.state,
        mapped: this.definition,
        publish: () => undefined,
        deviceExposesChanged: () => undefined,
      };
      if (endpointName) {
        for (const [k, v] of Object.entries(meta.message)) {
          if (!k.endsWith(`_${endpointName}`)) continue;
          delete meta.message[k];
          meta.message[k.slice(0, -endpointName.length - 1)] = v;
        }
      }
      // Some converters pause on an unref'd timer (a read after a colour loop stops): keep the process up meanwhile.
      const awake = setInterval(() => undefined, 1000);
      try {
        const result =
          type === 'set'
            ? await converter.convertSet!(target as never, key, value, meta as never)
            : await converter.convertGet!(target as never, key, meta as never);
        if (result?.state) {
          for (const [k, v] of Object.entries(result.state)) published[endpointName ? `${k}_${endpointName}` : k] = v;
        }
      } catch (err) {
        this.errors.push({ key: wholeKey, error: `Publish '${type}' '${key}' failed: '${(err as Error).message}'` });
      } finally {
        clearInterval(awake);
      }
      once.push(converter);
    }
    Object.assign(this.state, published);
    return { calls: this.calls.slice(firstCall), errors: this.errors.slice(firstError), published };
  }

  /**
   * A Zigbee message from the device (an attribute report, a command it sends), through the definition's fromZigbee
   * converters as Zigbee2MQTT's receive does: the state it publishes (merged into `state`).
   */
  async report(endpointId: number, cluster: string, type: string, data: KeyValue): Promise<KeyValue> {
    const endpoint = this.zh.getEndpoint(endpointId) ?? this.endpoint(undefined);
    const out: KeyValue = {};
    for (const c of this.definition.fromZigbee) {
      const types = Array.isArray(c.type) ? c.type : [c.type];
      if (c.cluster !== cluster || !types.includes(type as never)) continue;
      const msg = { data, endpoint, device: this.zh, meta: { rawData: Buffer.alloc(0) }, groupID: 0, type, cluster, linkquality: 200 };
      const converted = await c.convert(this.definition, msg as never, () => undefined, {}, {
        state: this.state,
        device: this.zh,
        deviceExposesChanged: () => undefined,
      } as never);
      if (converted) Object.assign(out, converted);
    }
    Object.assign(this.state, out);
    return out;
  }
}

/** A simulated device and its bridge/devices entry (exposes serialised as Zigbee2MQTT publishes them). */
export async function simulatedDevice(
  vendorFile: string,
  model: string,
  ieee: string,
  friendlyName: string,
  state: KeyValue = {},
): Promise<SimulatedZigbeeDevice> {
  const definition = await loadDefinition(vendorFile, model);
  return new SimulatedZigbeeDevice(definition, z2mEntryOf(definition, ieee, friendlyName), state);
}
