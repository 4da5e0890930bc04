// A larger generated home of the kind Home Assistant users have: two floors
// and a garden, several lights per room (dimmable, colour, plain switches),
// ceiling fans with speeds and presets, water valves, blinds, curtains and
// shades with positions, a garage door and a gate, locks, thermostats, every
// common sensor class and cameras. Parsed from real device-file YAML, so it is
// what the loader would give. `copies` repeats the rooms (numbered) to reach
// the size of a big install (the benchmark's 1,000 entities).
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Entity } from '../../src/devices/model.js';

interface Room {
  area: string;
  floor: string;
  lights: Array<{ name: string; aliases?: string[]; color?: boolean; plain?: boolean }>;
  fan?: string;
  valve?: string;
  covers?: Array<{ name: string; dc: string; aliases?: string[] }>;
  climate?: boolean;
  sensors?: boolean;
  motion?: boolean;
  contact?: { name: string; dc: string };
  lock?: string;
  camera?: string;
}

const ROOMS: Room[] = [
  {
    area: 'Kitchen',
    floor: 'Ground floor',
    lights: [{ name: 'Kitchen ceiling light', color: true }, { name: 'Kitchen island lights' }, { name: 'Under cabinet lights', plain: true }],
    valve: 'Kitchen water valve',
    covers: [{ name: 'Kitchen blind', dc: 'blind' }],
    sensors: true,
    motion: true,
  },
  {
    area: 'Living room',
    floor: 'Ground floor',
    lights: [
      { name: 'Living room ceiling light', color: true },
      { name: 'Reading corner lights' },
      { name: 'TV backlight', color: true },
      { name: 'Floor lamp', plain: true },
    ],
    fan: 'Living room ceiling fan',
    covers: [
      { name: 'Living room curtains', dc: 'curtain' },
      { name: 'Patio shade', dc: 'shade' },
    ],
    climate: true,
    sensors: true,
    motion: true,
    contact: { name: 'Patio door sensor', dc: 'door' },
  },
  {
    area: 'Dining room',
    floor: 'Ground floor',
    lights: [{ name: 'Dining table pendant', aliases: ['chandelier'] }, { name: 'Dining wall lights' }],
    covers: [{ name: 'Dining room blinds', dc: 'blind' }],
  },
  {
    area: 'Hallway',
    floor: 'Ground floor',
    lights: [{ name: 'Hall light' }, { name: 'Porch light', plain: true }],
    motion: true,
    lock: 'Front door lock',
    camera: 'Front door camera',
    contact: { name: 'Front door sensor', dc: 'door' },
  },
  {
    area: 'Office',
    floor: 'Upstairs',
    lights: [{ name: 'Desk lamp' }, { name: 'Office ceiling light' }],
    fan: 'Office fan',
    covers: [{ name: 'Office blind', dc: 'blind' }],
    climate: true,
    sensors: true,
    motion: true,
    contact: { name: 'Office window', dc: 'window' },
  },
  {
    area: 'Bedroom',
    floor: 'Upstairs',
    lights: [{ name: 'Bedroom lamp', color: true }, { name: 'Bedroom ceiling light' }, { name: 'Bedside lamp' }],
    fan: 'Bedroom ceiling fan',
    covers: [
      { name: 'Bedroom curtains', dc: 'curtain' },
      { name: 'Bedroom shutter', dc: 'shutter' },
    ],
    climate: true,
    sensors: true,
    motion: true,
    contact: { name: 'Bedroom window', dc: 'window' },
  },
  {
    area: 'Bathroom',
    floor: 'Upstairs',
    lights: [{ name: 'Bathroom mirror light' }, { name: 'Bathroom ceiling light' }],
    fan: 'Bathroom extractor fan',
    valve: 'Bathroom water valve',
    sensors: true,
    motion: true,
  },
  {
    area: 'Kids room',
    floor: 'Upstairs',
    lights: [{ name: 'Night light', color: true }, { name: 'Kids room ceiling light' }],
    covers: [{ name: 'Kids room blind', dc: 'blind' }],
    sensors: true,
  },
  {
    area: 'Garage',
    floor: 'Outside',
    lights: [{ name: 'Garage light', plain: true }],
    covers: [{ name: 'Garage door', dc: 'garage', aliases: ['garage'] }],
    camera: 'Driveway camera',
    contact: { name: 'Garage side door', dc: 'door' },
    lock: 'Garage side door lock',
  },
  {
    area: 'Garden',
    floor: 'Outside',
    lights: [{ name: 'Garden lights' }, { name: 'Path lights', plain: true }],
    valve: 'Sprinkler valve',
    covers: [
      { name: 'Front gate', dc: 'gate' },
      { name: 'Terrace awning', dc: 'awning' },
    ],
    sensors: true,
    camera: 'Garden camera',
  },
];

const q = (s: string) => JSON.stringify(s);
const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');

function roomYaml(r: Room, suffix: string): string {
  const out: string[] = [];
  const t = (name: string) => `big/${slug(name)}`;
  const name = (n: string) => (suffix ? `${n} ${suffix}` : n);
  const area = name(r.area);
  const device = (id: string, entities: string[]) => {
    out.push(`  - id: ${slug(id).slice(0, 60)}\n    name: ${q(id)}\n    area: ${q(area)}\n    floor: ${q(r.floor)}\n    entities:\n${entities.join('\n')}`);
  };
  for (const l of r.lights) {
    const n = name(l.name);
    const aliases = l.aliases ? `\n        aliases: [${l.aliases.map((a) => q(suffix ? `${a} ${suffix}` : a)).join(', ')}]` : '';
    if (l.plain) {
      device(n, [`      main:\n        kind: switch\n        name: ${q(n)}${aliases}\n        state_topic: ${t(n)}\n        command_topic: ${t(n)}/set`]);
    } else {
      const color = l.color ? `\n          color_x: color.x\n          color_y: color.y\n        color_modes: [xy]` : '';
      device(n, [
        `      main:\n        kind: light\n        name: ${q(n)}${aliases}\n        state_topic: ${t(n)}\n        value_path: state\n        command_topic: ${t(n)}/set\n        command_format: json\n        attributes:\n          brightness: brightness${color}\n        ranges:\n          brightness: { min: 0, max: 254, step: 1 }`,
      ]);
    }
  }
  if (r.fan) {
    const n = name(r.fan);
    device(n, [
      `      main:\n        kind: fan\n        name: ${q(n)}\n        state_topic: ${t(n)}\n        command_topic: ${t(n)}/set\n        attributes:\n          percentage: { topic: ${t(n)}/percentage }\n          preset_mode: { topic: ${t(n)}/preset }\n        command_topics:\n          percentage: ${t(n)}/percentage/set\n          preset_mode: ${t(n)}/preset/set\n        options:\n          preset_mode: [low, medium, high, breeze]`,
    ]);
  }
  if (r.valve) {
    const n = name(r.valve);
    device(n, [
      `      main:\n        kind: valve\n        name: ${q(n)}\n        device_class: water\n        state_topic: ${t(n)}\n        command_topic: ${t(n)}/set`,
    ]);
  }
  for (const c of r.covers ?? []) {
    const n = name(c.name);
    const aliases = c.aliases ? `\n        aliases: [${c.aliases.map((a) => q(suffix ? `${a} ${suffix}` : a)).join(', ')}]` : '';
    device(n, [
      `      main:\n        kind: cover\n        name: ${q(n)}${aliases}\n        device_class: ${c.dc}\n        state_topic: ${t(n)}\n        command_topic: ${t(n)}/set\n        attributes:\n          position: { topic: ${t(n)}/position }\n        command_topics:\n          position: ${t(n)}/position/set`,
    ]);
  }
  if (r.climate) {
    const n = name(`${r.area} thermostat`);
    device(n, [
      `      main:\n        kind: climate\n        name: ${q(n)}\n        unit: °C\n        state_topic: ${t(n)}\n        value_path: mode\n        attributes:\n          temperature: target\n          current_temperature: current\n        command_topics:\n          mode: ${t(n)}/mode/set\n          temperature: ${t(n)}/temperature/set\n        options:\n          mode: ['off', heat, cool, auto]\n        ranges:\n          temperature: { min: 7, max: 30, step: 0.5 }`,
    ]);
  }
  if (r.sensors) {
    const n = name(`${r.area} sensor`);
    device(n, [
      `      temperature:\n        kind: sensor\n        name: ${q(`${area} temperature`)}\n        device_class: temperature\n        unit: °C\n        state_topic: ${t(n)}\n        value_path: temperature`,
      `      humidity:\n        kind: sensor\n        name: ${q(`${area} humidity`)}\n        device_class: humidity\n        unit: '%'\n        state_topic: ${t(n)}\n        value_path: humidity`,
      `      battery:\n        kind: sensor\n        name: ${q(`${area} sensor battery`)}\n        device_class: battery\n        unit: '%'\n        state_topic: ${t(n)}\n        value_path: battery`,
    ]);
  }
  if (r.motion) {
    const n = name(`${r.area} motion`);
    device(n, [`      main:\n        kind: binary_sensor\n        name: ${q(n)}\n        device_class: occupancy\n        state_topic: ${t(n)}`]);
  }
  if (r.contact) {
    const n = name(r.contact.name);
    device(n, [`      main:\n        kind: binary_sensor\n        name: ${q(n)}\n        device_class: ${r.contact.dc}\n        state_topic: ${t(n)}`]);
  }
  if (r.lock) {
    const n = name(r.lock);
    device(n, [`      main:\n        kind: lock\n        name: ${q(n)}\n        state_topic: ${t(n)}\n        command_topic: ${t(n)}/set`]);
  }
  if (r.camera) {
    const n = name(r.camera);
    device(n, [`      main:\n        kind: camera\n        name: ${q(n)}\n        state_topic: ${t(n)}`]);
  }
  if (r.area === 'Kitchen') {
    const n = name('Kitchen energy meter');
    device(n, [
      `      power:\n        kind: sensor\n        name: ${q(`${area} power`)}\n        device_class: power\n        unit: W\n        state_topic: ${t(n)}\n        value_path: power`,
      `      energy:\n        kind: sensor\n        name: ${q(`${area} energy`)}\n        device_class: energy\n        unit: kWh\n        state_topic: ${t(n)}\n        value_path: energy`,
    ]);
  }
  return out.join('\n');
}

/** The generated home: its rooms once (`copies` 1), or repeated with numbered areas. */
export function generatedHome(copies = 1): Entity[] {
  const blocks: string[] = [];
  for (let c = 0; c < copies; c++) for (const r of ROOMS) blocks.push(roomYaml(r, c === 0 ? '' : String(c + 1)));
  const parsed = parseDeviceFile('generated-home.yaml', `devices:\n${blocks.join('\n')}\n`);
  if (!('devices' in parsed)) throw new Error(`the generated home does not load: ${JSON.stringify(parsed)}`);
  return parsed.devices.flatMap((d) => d.entities);
}

/** A generated home of at least `n` entities. */
export function generatedHomeOf(n: number): Entity[] {
  const one = generatedHome(1).length;
  return generatedHome(Math.ceil(n / one)).slice(0, Math.max(n, 0));
}

/** What the demo home lacks for the issue's examples: one ceiling fan and one water valve. */
export function demoExtras(): Entity[] {
  const parsed = parseDeviceFile(
    'demo-extras.yaml',
    `devices:
  - id: ceiling_fan
    name: Ceiling fan
    area: Living room
    entities:
      fan:
        kind: fan
        name: Ceiling fan
        state_topic: extra/fan
        command_topic: extra/fan/set
        attributes:
          percentage: { topic: extra/fan/percentage }
        command_topics:
          percentage: extra/fan/percentage/set
  - id: water_valve
    name: Water valve
    area: Kitchen
    entities:
      valve:
        kind: valve
        name: Water valve
        aliases: [main water]
        device_class: water
        state_topic: extra/valve
        command_topic: extra/valve/set
`,
  );
  if (!('devices' in parsed)) throw new Error(`the demo extras do not load: ${JSON.stringify(parsed)}`);
  return parsed.devices.flatMap((d) => d.entities);
}
