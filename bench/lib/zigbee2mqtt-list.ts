// A Zigbee2MQTT home for the benches: a bridge/devices list of climate sensors (SNZB-02: temperature, humidity,
// pressure, battery, occupancy) and plugs (ZBMINI: switch, power, energy, voltage, current), five entities each,
// in the shape Zigbee2MQTT publishes, and the state each would report.

const numeric = (name: string, unit: string) => ({ type: 'numeric', name, property: name, access: 1, unit, label: name });

const SENSOR_EXPOSES = [
  numeric('temperature', '°C'),
  numeric('humidity', '%'),
  numeric('pressure', 'hPa'),
  numeric('battery', '%'),
  { type: 'binary', name: 'occupancy', property: 'occupancy', access: 1, value_on: true, value_off: false },
];
const PLUG_EXPOSES = [
  {
    type: 'switch',
    features: [{ type: 'binary', name: 'state', property: 'state', access: 7, value_on: 'ON', value_off: 'OFF', value_toggle: 'TOGGLE' }],
  },
  numeric('power', 'W'),
  numeric('energy', 'kWh'),
  numeric('voltage', 'V'),
  numeric('current', 'A'),
];

/** Even devices are sensors, odd ones plugs. */
export const isSensor = (d: number): boolean => d % 2 === 0;

/** One device of the list, named by `friendlyName(d)`. */
export function zigbee2mqttDevice(d: number, friendlyName: string): unknown {
  const sensor = isSensor(d);
  return {
    ieee_address: `0x${(0x00124b0000000000n + BigInt(d)).toString(16).padStart(16, '0')}`,
    type: sensor ? 'EndDevice' : 'Router',
    supported: true,
    disabled: false,
    interview_completed: true,
    friendly_name: friendlyName,
    power_source: sensor ? 'Battery' : 'Mains (single phase)',
    definition: {
      model: sensor ? 'SNZB-02' : 'ZBMINI',
      vendor: 'Bench',
      description: sensor ? 'Climate sensor' : 'Plug',
      exposes: sensor ? SENSOR_EXPOSES : PLUG_EXPOSES,
      supports_ota: false,
    },
  };
}

/** The state device `d` reports on its topic. */
export function zigbee2mqttState(d: number): Record<string, unknown> {
  return isSensor(d)
    ? {
        temperature: 20 + (d % 50) / 10,
        humidity: 40 + (d % 30),
        pressure: 1013 - (d % 20),
        battery: 100 - (d % 60),
        occupancy: d % 3 === 0,
        linkquality: 80 + (d % 100),
      }
    : { state: d % 4 === 1 ? 'ON' : 'OFF', power: (d % 300) + 0.5, energy: d / 10, voltage: 229.8, current: 0.42, linkquality: 80 + (d % 100) };
}
