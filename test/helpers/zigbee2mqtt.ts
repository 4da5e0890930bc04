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
  const def = zhc.prepareDefinition(raw);
  if (typeof def.exposes === 'function') throw new Error(`${model} has dynamic exposes`);
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
