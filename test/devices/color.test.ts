// Colours: words and #hex into what a light takes, and the tolerance with
// which a light's reported colour confirms a command.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { colorMatches, nearestColorName, parseColor, rgbToHs, rgbToXy } from '../../src/devices/color.js';
import { encodeCommand, isConfirmedBy } from '../../src/devices/commands.js';
import type { Entity } from '../../src/devices/model.js';
import { zigbeeLight } from './helpers.js';
import type { EntityState } from '../../src/devices/state-cache.js';
import { toCommand, ArgumentError } from '../../src/tools/parameters.js';

const light = (over: Partial<Entity> = {}) => zigbeeLight('study', 'lamp', 'Study lamp', over);
const on = (attributes: Record<string, number>): EntityState => ({ entityId: 'study.lamp', value: 'on', attributes, available: true });

describe('colours', () => {
  it('reads names and #hex, and nothing else', () => {
    assert.deepEqual(parseColor('Red'), { r: 255, g: 0, b: 0 });
    assert.deepEqual(parseColor(' sky   blue '), { r: 135, g: 206, b: 235 });
    assert.deepEqual(parseColor('#0f8'), { r: 0, g: 255, b: 136 });
    assert.deepEqual(parseColor('ff8800'), { r: 255, g: 136, b: 0 });
    for (const bad of ['', 'redd', '#12345', 'constructor', 'toString', '#ggg']) assert.equal(parseColor(bad), undefined, bad);
  });

  it('converts to CIE xy and hue/saturation as lights take them', () => {
    assert.deepEqual(rgbToXy({ r: 255, g: 0, b: 0 }), { x: 0.6401, y: 0.33 });
    assert.deepEqual(rgbToXy({ r: 255, g: 255, b: 255 }), { x: 0.3127, y: 0.329 });
    assert.deepEqual(rgbToHs({ r: 0, g: 0, b: 255 }), { hue: 240, saturation: 100 });
    assert.deepEqual(rgbToHs({ r: 255, g: 140, b: 0 }), { hue: 33, saturation: 100 });
  });

  it("accepts a bulb's gamut-clamped red, not a different colour", () => {
    const red = parseColor('red')!;
    // A Philips Hue (gamut C) bulb reports red as about (0.6915, 0.3083).
    assert.equal(colorMatches(red, { color_x: 0.6915, color_y: 0.3083 }), true);
    assert.equal(colorMatches(red, rgbToXy(parseColor('blue')!) as never), undefined, 'x/y keys are color_x/color_y');
    assert.equal(colorMatches(red, { color_x: 0.17, color_y: 0.7 }), false);
    assert.equal(colorMatches(red, { color_x: 0.529, color_y: 0.4182 }), false, 'orange is not red');
    assert.equal(colorMatches(red, { hue: 358, saturation: 97 }), true, 'hue wraps around');
    assert.equal(colorMatches(red, { hue: 120, saturation: 100 }), false);
    assert.equal(colorMatches(red, { red: 250, green: 10, blue: 5 }), true);
    assert.equal(colorMatches(red, { brightness: 200 }), undefined, 'no colour reported');
    assert.equal(nearestColorName({ color_x: 0.6915, color_y: 0.3083 }), 'red');
    assert.equal(nearestColorName({ hue: 240, saturation: 100 }), 'blue');
    assert.equal(nearestColorName({ brightness: 1 }), undefined);
  });

  it('a colour call becomes the light mode’s attributes in one JSON command, confirmed by the reported colour', () => {
    const lamp = light();
    const cmd = toCommand(lamp, { action: 'turn_on', color: 'Red', brightness: 100 });
    assert.deepEqual(cmd, { action: 'turn_on', brightness: 100, color: 'red' });
    assert.deepEqual(encodeCommand(lamp, cmd), [{ topic: 'z/study/set', payload: '{"state":"ON","brightness":100,"color":{"x":0.6401,"y":0.33}}' }]);
    const hs = light({ colorModes: ['hs'], attributes: { hue: { path: 'color.hue' }, saturation: { path: 'color.saturation' } } });
    assert.deepEqual(encodeCommand(hs, { action: 'turn_on', color: 'blue' }), [
      { topic: 'z/study/set', payload: '{"state":"ON","color":{"hue":240,"saturation":100}}' },
    ]);
    assert.equal(isConfirmedBy(lamp, cmd, on({ brightness: 100, color_x: 0.6915, color_y: 0.3083 })), true);
    assert.equal(isConfirmedBy(lamp, cmd, on({ brightness: 100, color_x: 0.3127, color_y: 0.329 })), false, 'still white');
  });

  it('refuses an unknown colour, and a colour for a light without one, with the reason', () => {
    assert.throws(
      () => toCommand(light(), { action: 'turn_on', color: 'octarine' }),
      (e: Error) => e instanceof ArgumentError && /unknown colour "octarine": use a name \(red, /.test(e.message),
    );
    assert.throws(() => toCommand(light({ colorModes: undefined }), { action: 'turn_on', color: 'red' }), /this light takes no colour/);
    assert.throws(() => toCommand(light(), { action: 'turn_off', color: 'red' }), /turn_off does not take "color"/);
  });
});
