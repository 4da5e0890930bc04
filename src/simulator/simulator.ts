// The device simulator: any Device from the model, simulated by entity kind
// and driven by the same device files the bridge reads, so the demo home and
// the bridge never disagree about topics. One MQTT client per device.
import type { Device } from '../devices/model.js';
import { redactUrl, type Logger } from '../log.js';
import { OutageLog } from './outage.js';
import { type DeviceLinkOptions, SimulatedDevice } from './device.js';

export type { ReceivedCommand } from './device.js';

export interface SimulatorOptions {
  url: string;
  devices: Device[];
  log: Logger;
  /** 4 (MQTT 3.1.1, the default: aedes speaks nothing newer) or 5. */
  protocolVersion?: 4 | 5;
  /** How long start (and startDevice) wait for the broker before failing. Default 10 s. */
  connectTimeoutMs?: number;
  /** The QoS of the devices' command subscriptions (default 1). */
  commandQos?: DeviceLinkOptions['commandQos'];
  /** Told of every command a device receives, as it arrives. */
  onCommand?: DeviceLinkOptions['onCommand'];
}

export interface Simulator {
  readonly deviceIds: string[];
  /** Abrupt: destroy that device's socket so the broker fires its last will ("offline"). */
  stopDevice(id: string): Promise<void>;
  /** Reconnect it; it publishes "online" again and its current state. */
  startDevice(id: string): Promise<void>;
  /** Whether the device is connected and has announced itself again, so a command reaches it (after an outage it reconnects by itself). */
  connected(id: string): boolean;
  /** The simulated device's current internal state, in logical terms (`value` plus attributes). */
  state(entityId: string): Record<string, unknown>;
  /** Clean shutdown of every device: publish offline (retained) then disconnect. */
  close(): Promise<void>;
}

/** Resolves once every device is connected and has published its initial state. */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  const devices = new Map<string, SimulatedDevice>();
  const byEntity = new Map<string, SimulatedDevice>();
  const linkOptions = {
    url: options.url,
    protocolVersion: options.protocolVersion ?? 4,
    log: options.log,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    outage: new OutageLog(options.log),
    commandQos: options.commandQos,
    onCommand: options.onCommand,
  };
  for (const device of options.devices) {
    if (devices.has(device.id)) throw new Error(`device id "${device.id}" is simulated twice`);
    const sim = new SimulatedDevice(device, linkOptions);
    devices.set(device.id, sim);
    for (const id of sim.entityIds()) byEntity.set(id, sim);
  }

  const get = (id: string): SimulatedDevice => {
    const d = devices.get(id);
    if (!d) throw new Error(`no simulated device "${id}" (known: ${[...devices.keys()].join(', ')})`);
    return d;
  };

  let closed = false;
  const closeAll = async () => {
    closed = true;
    await Promise.all([...devices.values()].map((d) => d.close()));
  };

  const started = await Promise.allSettled([...devices.values()].map((d) => d.start()));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await closeAll();
    throw failed.reason;
  }
  options.log.info({ devices: devices.size, url: redactUrl(options.url) }, 'simulator started');

  return {
    deviceIds: [...devices.keys()],
    async stopDevice(id) {
      await get(id).stop();
    },
    async startDevice(id) {
      if (closed) throw new Error('the simulator is closed');
      await get(id).start();
    },
    connected(id) {
      return get(id).connected;
    },
    state(entityId) {
      const d = byEntity.get(entityId);
      if (!d) throw new Error(`no simulated entity "${entityId}"`);
      return d.state(entityId);
    },
    async close() {
      if (closed) return;
      await closeAll();
      options.log.info('simulator stopped');
    },
  };
}
