import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { loadDeviceFiles, parseDeviceFile, parseDevicesInChunks } from '../../src/devices/loader.js';
import { ENTITY_KINDS } from '../../src/devices/model.js';

const DEMO = fileURLToPath(new URL('../../devices/demo', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'hearth-devices-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const write = (name: string, text: string) => writeFileSync(join(dir, name), text);

describe('device files', () => {
  it('loads the demo home: every device the README promises, with areas and topics', () => {
    const { devices, problems } = loadDeviceFiles([DEMO]);
    assert.deepEqual(problems, []);
    const ids = devices.flatMap((d) => d.entities.map((e) => `${e.id}:${e.kind}`)).sort();
    assert.deepEqual(ids, [
      'front_door.camera:camera',
      'front_door.lock:lock',
      'garage_door.door:cover',
      'hallway_motion.occupancy:binary_sensor',
      'kitchen_light.light:light',
      'living_room_climate.humidity:sensor',
      'living_room_climate.temperature:sensor',
      'living_room_lamp.lamp:switch',
      'robot_vacuum.vacuum:vacuum',
      'siren.siren:siren',
      'thermostat.climate:climate',
    ]);
    const light = devices.flatMap((d) => d.entities).find((e) => e.id === 'kitchen_light.light')!;
    assert.equal(light.area, 'Kitchen');
    assert.deepEqual(light.ranges.brightness, { min: 0, max: 254, step: 1 });
    assert.equal(light.commandFormat, 'json');
    assert.deepEqual(light.attributes.brightness, { path: 'brightness' });
    const temp = devices.flatMap((d) => d.entities).find((e) => e.id === 'living_room_climate.temperature')!;
    assert.equal(temp.unit, '°C');
    assert.equal(temp.availability?.sources[0].topic, 'hearth-demo/living_room_climate/availability');
  });

  it('reports a bad file with its path and the field at fault, and still loads the others', () => {
    write('good.yaml', 'devices:\n  - id: plug\n    entities:\n      relay: { kind: switch, state_topic: p/state, command_topic: p/set }\n');
    write('bad-kind.yaml', 'devices:\n  - id: fridge\n    entities:\n      door: { kind: fridge, state_topic: f/door }\n');
    write('no-command.yaml', 'devices:\n  - id: heater\n    entities:\n      relay: { kind: switch, state_topic: h/state }\n');
    write('wildcard.yaml', 'devices:\n  - id: wild\n    entities:\n      relay: { kind: switch, command_topic: "w/+/set" }\n');
    write('broken.yml', 'devices: [\n');
    write(
      'range.yaml',
      'devices:\n  - id: dimmer\n    entities:\n      light: { kind: light, command_topic: d/set, ranges: { brightness: { min: 10, max: 5 } } }\n',
    );
    write('notes.txt', 'not a device file');
    const { devices, problems, files } = loadDeviceFiles([dir]);
    assert.deepEqual(
      devices.map((d) => d.id),
      ['plug'],
    );
    assert.equal(files.length, 6, 'only .yaml/.yml files are read');
    const by = (name: string) => problems.filter((p) => p.file === join(dir, name));
    assert.deepEqual(
      by('bad-kind.yaml').map((p) => p.path),
      ['devices[0].entities.door.kind'],
    );
    assert.match(by('bad-kind.yaml')[0].message, /must be one of "sensor"/);
    assert.deepEqual(
      by('no-command.yaml').map((p) => `${p.path}: ${p.message}`),
      ['devices[0].entities.relay.command_topic: is required'],
    );
    assert.equal(by('wildcard.yaml')[0].path, 'devices[0].entities.relay.command_topic');
    assert.match(by('broken.yml')[0].message, /not valid YAML/);
    assert.deepEqual(
      by('range.yaml').map((p) => `${p.path}: ${p.message}`),
      ['devices[0].entities.light.ranges.brightness: min 10 must be below max 5'],
    );
  });

  it('refuses a device id declared twice, naming the first file', () => {
    const sub = mkdtempSync(join(dir, 'dup-'));
    writeFileSync(join(sub, 'a.yaml'), 'devices:\n  - id: twin\n    entities:\n      t: { kind: sensor, state_topic: a/t }\n');
    writeFileSync(join(sub, 'b.yaml'), 'devices:\n  - id: twin\n    entities:\n      t: { kind: sensor, state_topic: b/t }\n');
    const { devices, problems } = loadDeviceFiles([sub]);
    assert.equal(devices.length, 1);
    assert.equal(devices[0].entities[0].stateTopic, 'a/t');
    assert.match(problems[0].message, /device id "twin" is already declared in .*a\.yaml/);
  });

  it('says so when a listed path does not exist', () => {
    const { problems } = loadDeviceFiles([join(dir, 'missing')]);
    assert.deepEqual(
      problems.map((p) => p.message),
      ['does not exist'],
    );
  });

  it('takes colour modes on JSON lights, and says what a colour light is missing', () => {
    const light = (extra: string) =>
      `devices:\n  - id: bulb\n    entities:\n      light:\n        kind: light\n        state_topic: b/state\n        command_topic: b/set\n${extra}`;
    write(
      'colour-ok.yaml',
      light('        command_format: json\n        color_modes: [hs, xy]\n        attributes: { hue: color.hue, saturation: color.saturation }\n'),
    );
    const ok = loadDeviceFiles([join(dir, 'colour-ok.yaml')]);
    assert.deepEqual(ok.problems, []);
    assert.deepEqual(ok.devices[0]!.entities[0]!.colorModes, ['hs', 'xy']);
    write('colour-plain.yaml', light('        color_modes: [xy]\n        attributes: { color_x: color.x, color_y: color.y }\n'));
    assert.deepEqual(
      loadDeviceFiles([join(dir, 'colour-plain.yaml')]).problems.map((p) => `${p.path}: ${p.message}`),
      ['devices[0].entities.light.color_modes: only a light with command_format: json takes colours'],
    );
    write('colour-attrs.yaml', light('        command_format: json\n        color_modes: [xy]\n'));
    assert.deepEqual(
      loadDeviceFiles([join(dir, 'colour-attrs.yaml')]).problems.map((p) => `${p.path}: ${p.message}`),
      ['devices[0].entities.light.attributes: color_modes xy needs attributes color_x, color_y (where the colour is in the state and the command)'],
    );
    write('colour-bad.yaml', light('        command_format: json\n        color_modes: [cmyk]\n'));
    assert.match(loadDeviceFiles([join(dir, 'colour-bad.yaml')]).problems[0]!.message, /must be equal to one of the allowed values|must be one of/);
  });

  it('accepts every entity kind the model knows', () => {
    const sub = mkdtempSync(join(dir, 'kinds-'));
    const lines = ENTITY_KINDS.map(
      (k) => `      ${k}: { kind: ${k}, state_topic: all/${k}, command_topic: all/${k}/set${k === 'select' ? ', options: [a, b]' : ''} }`,
    );
    writeFileSync(join(sub, 'all.yaml'), `devices:\n  - id: all\n    entities:\n${lines.join('\n')}\n`);
    const { devices, problems } = loadDeviceFiles([sub]);
    assert.deepEqual(problems, []);
    assert.deepEqual(devices[0].entities.map((e) => e.kind).sort(), [...ENTITY_KINDS].sort());
    assert.deepEqual(devices[0].entities.find((e) => e.kind === 'select')!.options, { value: ['a', 'b'] });
  });

  it('parses a big file device by device into what the whole-file parse gives, and falls back to it for anything else', () => {
    const devices = Array.from({ length: 600 }, (_, d) =>
      [
        `  # device ${d}`,
        `  - id: big${d}`,
        `    name: "Lamp ${d} # not a comment"`,
        `    area: Room ${d % 7}`,
        '    entities:',
        `      light: { kind: switch, state_topic: big/${d}/state, command_topic: big/${d}/set }`,
        '      note:',
        '        kind: sensor',
        `        state_topic: big/${d}/note`,
        '        value_template: |',
        '          # kept: text of a block scalar',
        '',
        `          {{ value }}`,
      ].join('\n'),
    );
    const text = `# a home\ndevices:\n${devices.join('\n')}\n`;
    assert.ok(text.length > 64 * 1024);
    const chunked = parseDevicesInChunks(text);
    assert.ok(chunked, 'the plain shape is parsed in chunks');
    assert.deepEqual(chunked, parseYaml(text));
    // An alias to another item's anchor, or another top-level key: the whole file is parsed.
    const aliased = text.replace('  - id: big0\n', '  - id: big0\n    x: &shared { a: 1 }\n').replace('  - id: big1\n', '  - id: big1\n    y: *shared\n');
    assert.equal(parseDevicesInChunks(aliased), undefined);
    assert.equal(parseDevicesInChunks(`${text}other: 1\n`), undefined);
    // A bad device in a big file is still reported by its path.
    const bad = parseDeviceFile('big.yaml', text.replace('kind: switch, state_topic: big/5/state', 'kind: toaster, state_topic: big/5/state'));
    assert.ok('problems' in bad);
    assert.match(JSON.stringify(bad.problems), /devices\[5\]|devices\/5/);
  });
});
