// A bridge/devices entry for a real zigbee-herdsman-converters model, its
// exposes serialised the way Zigbee2MQTT publishes them.
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';

interface Definition {
  vendor: string;
  model: string;
  description: string;
  exposes: unknown;
}

let definitions: Array<{ model: string }> | undefined;

export async function z2mEntry(model: string, ieee: string, friendlyName: string): Promise<Z2mDevice> {
  const zhc = (await import('zigbee-herdsman-converters')) as unknown as { prepareDefinition(d: unknown): Definition };
  if (!definitions) {
    const mod = (await import('zigbee-herdsman-converters/devices/index' as string)) as { default: unknown };
    // Node gives the CommonJS module's exports as default; tsx may unwrap one level more.
    definitions = (Array.isArray(mod.default) ? mod.default : (mod.default as { default: unknown[] }).default) as Array<{ model: string }>;
  }
  const raw = definitions.find((d) => d.model === model);
  if (!raw) throw new Error(`zigbee-herdsman-converters has no model ${model}`);
  return z2mEntryOf(zhc.prepareDefinition(raw), ieee, friendlyName);
}

/** The bridge/devices entry of a prepared definition. */
export function z2mEntryOf(def: Definition, ieee: string, friendlyName: string): Z2mDevice {
  if (typeof def.exposes === 'function') throw new Error(`${def.model} has dynamic exposes`);
  return {
    ieee_address: ieee,
    type: 'Router',
    supported: true,
    disabled: false,
    interview_completed: true,
    friendly_name: friendlyName,
    power_source: 'Mains (single phase)',
    definition: { model: def.model, vendor: def.vendor, description: def.description, exposes: JSON.parse(JSON.stringify(def.exposes)), supports_ota: false },
  } as Z2mDevice;
}

/** One device of a fixture home: model, IEEE address, friendly name, power source, the state it reports. */
export type Z2mHomeDevice = [string, string, string, 'Mains (single phase)' | 'Battery', Record<string, unknown>];

/**
 * A fixture home as the simulated Zigbee2MQTT (simulated-zigbee2mqtt.ts) publishes it: bridge/info, the coordinator
 * and each device's bridge/devices entry from zigbee-herdsman-converters, and each device's state by friendly name.
 */
export async function zigbee2mqttHomeFile(home: Z2mHomeDevice[]): Promise<{ json: string; devices: number; models: number }> {
  const coordinator = {
    ieee_address: '0x00124b0012345678',
    type: 'Coordinator',
    supported: true,
    disabled: false,
    interview_completed: true,
    friendly_name: 'Coordinator',
    definition: null,
  };
  const devices: unknown[] = [coordinator];
  const states: Record<string, Record<string, unknown>> = {};
  for (const [model, ieee, name, power, state] of home) {
    const entry = await z2mEntry(model, ieee, name);
    devices.push({ ...entry, power_source: power, type: power === 'Battery' ? 'EndDevice' : 'Router' });
    states[name] = state;
  }
  const info = {
    version: '2.1.3',
    coordinator: { type: 'zStack3x0' },
    config: { advanced: { legacy_availability_payload: false } },
    log_level: 'info',
    permit_join: false,
  };
  return { json: `${JSON.stringify({ info, devices, states }, null, 1)}\n`, devices: home.length, models: new Set(home.map((h) => h[0])).size };
}
