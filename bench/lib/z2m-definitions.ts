// Every device definition zigbee-herdsman-converters ships, as Zigbee2MQTT
// would list it in bridge/devices, converted to Hearth devices: the largest
// real catalogue of exposes there is, for measuring what the tools cost.
import { convertDevice } from '../../src/devices/discovery/zigbee2mqtt/device.js';
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';
import type { Device } from '../../src/devices/model.js';

export async function z2mDefinitionEntries(): Promise<Z2mDevice[]> {
  const zhc = (await import('zigbee-herdsman-converters')) as unknown as { prepareDefinition(d: unknown): any };
  const mod = (await import('zigbee-herdsman-converters/devices/index' as string)) as { default: unknown };
  // Node gives the CommonJS module's exports as default; tsx may unwrap one level more.
  const defs = (Array.isArray(mod.default) ? mod.default : (mod.default as { default: unknown[] }).default) as unknown[];
  return defs.map((raw, i): Z2mDevice => {
    const d = zhc.prepareDefinition(raw);
    const exposes = typeof d.exposes === 'function' ? d.exposes({ isDummyDevice: true }, {}) : d.exposes;
    return {
      ieee_address: `0x${i.toString(16).padStart(16, '0')}`,
      type: 'Router',
      supported: true,
      disabled: false,
      interview_completed: true,
      friendly_name: `${d.vendor} ${d.model}`.replace(/[+#]/g, '_'),
      power_source: 'Mains (single phase)',
      definition: { model: d.model, vendor: d.vendor, description: d.description, exposes: JSON.parse(JSON.stringify(exposes ?? [])), supports_ota: !!d.ota },
    };
  });
}

/** The devices Hearth makes of every definition (those that yield any entity). */
export async function z2mDefinitionDevices(): Promise<Device[]> {
  const out: Device[] = [];
  for (const entry of await z2mDefinitionEntries()) {
    const c = convertDevice(entry, { prefix: 'zigbee2mqtt', deviceAvailability: true });
    if (c.device) out.push(c.device);
  }
  return out;
}
