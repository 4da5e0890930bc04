// Colour temperature: kelvin in, the light's unit out (and back), the
// tolerance a report confirms within, the arguments refused with the range,
// device files that declare it badly, and the state text a model reads.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { colorTempMatches, fromDeviceColorTemp, kelvinRangeOfMireds, toDeviceColorTemp } from '../../src/devices/color-temp.js';
import { decodeCommand, encodeCommand, isConfirmedBy } from '../../src/devices/commands.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { Entity } from '../../src/devices/model.js';
import { zigbeeLight } from './helpers.js';
import type { EntityState } from '../../src/devices/state-cache.js';
import { ArgumentError, toCommand } from '../../src/tools/parameters.js';
import { stateText } from '../../src/tools/state-text.js';

const MIRED = { minKelvin: 2200, maxKelvin: 4000, unit: 'mired' as const, mireds: { min: 250, max: 454 } };
const bulb = (over: Partial<Entity> = {}) =>
  zigbeeLight('desk', 'bulb', 'Desk bulb', {
    attributes: {
      brightness: { path: 'brightness' },
      color_temp: { path: 'color_temp' },
      color_x: { path: 'color.x' },
      color_y: { path: 'color.y' },
      color_mode: { path: 'color_mode' },
    },
    colorTemp: MIRED,
    ...over,
  });
const on = (attributes: EntityState['attributes']): EntityState => ({ entityId: 'desk.bulb', value: 'on', attributes, available: true });

describe('colour temperature', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-ct-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("converts kelvin to the light's unit and back, keeping mireds within the light's own range", () => {
    assert.equal(toDeviceColorTemp(MIRED, 2700), 370);
    assert.equal(toDeviceColorTemp(MIRED, 2200), 454, '455 mireds is past the bulb: its warmest instead');
    assert.equal(toDeviceColorTemp({ minKelvin: 2000, maxKelvin: 6500, unit: 'kelvin' }, 2700.4), 2700);
    assert.equal(fromDeviceColorTemp(MIRED, 370), 2703);
    assert.equal(fromDeviceColorTemp(MIRED, '250'), 4000);
    assert.equal(fromDeviceColorTemp(MIRED, 0), undefined);
    assert.equal(fromDeviceColorTemp(MIRED, 'warm'), undefined);
    assert.deepEqual(kelvinRangeOfMireds(454, 250), { minKelvin: 2200, maxKelvin: 4000, mireds: { min: 250, max: 454 } });
  });

  it('a report within a few mireds confirms; further off, or a colour, does not', () => {
    assert.equal(colorTempMatches(MIRED, 2700, 373), true);
    assert.equal(colorTempMatches(MIRED, 2700, 390), false);
    assert.equal(colorTempMatches(MIRED, 2700, undefined), undefined);
    const cmd = { action: 'turn_on' as const, color_temp: 2700 };
    assert.equal(isConfirmedBy(bulb(), cmd, on({ color_temp: 366 })), true);
    assert.equal(isConfirmedBy(bulb(), cmd, on({ color_temp: 250 })), false, 'still cool');
    assert.equal(isConfirmedBy(bulb(), cmd, { ...on({ color_temp: 370 }), value: 'off' }), false, 'off');
    assert.equal(isConfirmedBy(bulb(), cmd, on({ brightness: 10 })), true, 'a light that reports no colour temperature is confirmed by being on');
  });

  it('encodes at the attribute path or on a topic of its own, and decodes it back as kelvin', () => {
    const [json] = encodeCommand(bulb({ attributes: { color_temp: { path: 'white.ct' } } }), { action: 'turn_on', color_temp: 2700 });
    assert.deepEqual(JSON.parse(json!.payload), { state: 'ON', white: { ct: 370 } });
    assert.deepEqual(decodeCommand(bulb(), 'z/desk/set', '{"state":"ON","color_temp":250}'), { action: 'turn_on', color_temp: 4000 });
    const plain = bulb({ commandFormat: 'plain', commandTopics: { color_temp: 'z/desk/ct' }, commandTemplates: { color_temp: (v) => `CT ${v}` } });
    assert.deepEqual(encodeCommand(plain, { action: 'turn_on', color_temp: 4000 }), [
      { topic: 'z/desk/ct', payload: 'CT 250' },
      { topic: 'z/desk/set', payload: 'ON' },
    ]);
    assert.deepEqual(decodeCommand(plain, 'z/desk/ct', '370'), { action: 'turn_on', color_temp: 2703 });
    assert.throws(() => encodeCommand(bulb({ colorTemp: undefined }), { action: 'turn_on', color_temp: 2700 }), /takes no colour temperature/);
  });

  it('refuses arguments out of range naming the range, with a colour, or on a light without it', () => {
    assert.deepEqual(toCommand(bulb(), { action: 'turn_on', color_temp_kelvin: 3000 }), { action: 'turn_on', color_temp: 3000 });
    assert.throws(
      () => toCommand(bulb(), { action: 'turn_on', color_temp_kelvin: 6500 }),
      (e: Error) => e instanceof ArgumentError && /"color_temp_kelvin" must be from 2200 to 4000 K for this light \(got 6500 K\)/.test(e.message),
    );
    assert.throws(() => toCommand(bulb(), { action: 'turn_on', color_temp_kelvin: 3000, color: 'red' }), /give "color" or "color_temp_kelvin", not both/);
    assert.throws(() => toCommand(bulb({ colorTemp: undefined }), { action: 'turn_on', color_temp_kelvin: 3000 }), /this light takes no colour temperature/);
    assert.throws(() => toCommand(bulb(), { action: 'turn_on', color_temp_kelvin: 'warm' }), /"color_temp_kelvin" must be from/);
    // color_temp, its earlier name (a flow's), is still taken and held to the same range.
    assert.deepEqual(toCommand(bulb(), { action: 'turn_on', color_temp: 3000 }), { action: 'turn_on', color_temp: 3000 });
    assert.throws(() => toCommand(bulb(), { action: 'turn_on', color_temp: 6500 }), /"color_temp" must be from 2200 to 4000 K/);
    assert.throws(() => toCommand(bulb(), { action: 'turn_on', color_temp: 3000, color_temp_kelvin: 3000 }), /not both/);
  });

  it('reads as kelvin and its word in colour-temperature mode, as the colour in colour mode', () => {
    const text = stateText(bulb(), on({ brightness: 254, color_temp: 370, color_mode: 'color_temp', color_x: 0.46, color_y: 0.41 }));
    assert.match(text, /: on, brightness 100% \(254 of 254\), colour temperature about 2700 K \(warm white\);/);
    assert.doesNotMatch(text, /color mode|x 0\.46/);
    const colour = stateText(bulb(), on({ color_temp: 370, color_mode: 'xy', color_x: 0.6401, color_y: 0.33 }));
    assert.match(colour, /: on, colour about red \(x 0\.6401, y 0\.33\)/);
    assert.doesNotMatch(colour, /color temp|colour temperature/);
    assert.match(stateText(bulb({ colorModes: undefined }), on({ color_temp: 153 })), /colour temperature about 6500 K \(daylight\)/);
  });

  it('device files: color_temp on a JSON light with its attribute, and each mistake named with its path', () => {
    const light = (extra: string) =>
      `devices:\n  - id: lamp\n    entities:\n      light:\n        kind: light\n        state_topic: l/state\n        command_topic: l/set\n${extra}`;
    const load = (name: string, text: string) => {
      writeFileSync(join(dir, name), text);
      return loadDeviceFiles([join(dir, name)]);
    };
    const ok = load(
      'ok.yaml',
      light('        command_format: json\n        attributes: { color_temp: ct }\n        color_temp: { min_kelvin: 2700, max_kelvin: 6500, unit: mired }\n'),
    );
    assert.deepEqual(ok.problems, []);
    assert.deepEqual(ok.devices[0]!.entities[0]!.colorTemp, { minKelvin: 2700, maxKelvin: 6500, unit: 'mired' });
    const own = load('own.yaml', light('        command_topics: { color_temp: l/ct }\n        color_temp: { min_kelvin: 2700, max_kelvin: 6500 }\n'));
    assert.deepEqual(own.problems, []);
    assert.equal(own.devices[0]!.entities[0]!.colorTemp!.unit, 'kelvin');
    const problems = (name: string, extra: string) => load(name, light(extra)).problems.map((p) => `${p.path}: ${p.message}`);
    assert.deepEqual(problems('plain.yaml', '        color_temp: { min_kelvin: 2700, max_kelvin: 6500 }\n'), [
      'devices[0].entities.light.color_temp: a colour temperature needs command_format: json or command_topics.color_temp',
    ]);
    assert.deepEqual(problems('attr.yaml', '        command_format: json\n        color_temp: { min_kelvin: 2700, max_kelvin: 6500 }\n'), [
      'devices[0].entities.light.attributes: color_temp needs attribute color_temp (where the colour temperature is in the state and the command)',
    ]);
    assert.deepEqual(
      problems(
        'order.yaml',
        '        command_format: json\n        attributes: { color_temp: ct }\n        color_temp: { min_kelvin: 6500, max_kelvin: 2700 }\n',
      ),
      ['devices[0].entities.light.color_temp.min_kelvin: min_kelvin 6500 must be below max_kelvin 2700'],
    );
    const unit = problems(
      'unit.yaml',
      '        command_format: json\n        attributes: { color_temp: ct }\n        color_temp: { min_kelvin: 2700, max_kelvin: 6500, unit: kelvins }\n',
    );
    assert.equal(unit.length, 1);
    assert.match(unit[0]!, /color_temp\.unit/);
  });
});
