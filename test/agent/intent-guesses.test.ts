// Issue 28, "acts on a guess": sentences that switched the wrong thing. On a home with the traps (a light called
// "Light A", two locks and a door contact, fans and a switch beside the kitchen's light, curtains in two rooms):
// a bare kind is not a name; one thing said that is several asks which; lighting words act on lights; a
// sentence from a room means that room.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IntentProvider } from '../../src/agent/providers/intent/index.js';
import { SentenceSet } from '../../src/agent/providers/intent/sentence-set.js';
import { loadDeviceFiles, parseDeviceFile } from '../../src/devices/loader.js';
import { generateTools, toolSpecs } from '../../src/tools/generator.js';

const home = loadDeviceFiles([new URL('../fixtures/homes/guesses.yaml', import.meta.url).pathname]);
const entities = home.devices.flatMap((d) => d.entities);
const { tools } = generateTools(entities, { shape: 'per-entity', groupAbove: 40 }, async () => ({}));
const names = toolSpecs(tools).map((s) => s.function.name);
const model = new IntentProvider({ entities: () => entities, tools: () => tools });

/** What a sentence would act on: entity ids (a grouped call is expanded by its arguments' kind and area). */
function acted(text: string, area?: string): { ids: string[]; reply?: string } {
  const r = model.understand(text, names, { area });
  const ids = r.calls.flatMap((c) => {
    const tool = tools.find((t) => t.name === c.tool)!;
    if (tool.meta.entityIds.length === 1) return tool.meta.entityIds;
    const { kind, area: where } = c.args as { kind?: string; area?: string };
    return entities.filter((e) => (!kind || kind === 'all' || e.kind === kind) && (!where || e.area === where)).map((e) => e.id);
  });
  return { ids: ids.sort(), reply: r.reply?.type };
}

describe('the offline model never acts on a guess', () => {
  it('a bare kind is not a name: "lights on" is every light (the kitchen from the kitchen), never only "Light A"', () => {
    assert.deepEqual(acted('lights on').ids, ['kitchen_ceiling.light', 'light_a.light']);
    assert.deepEqual(acted('turn off lights').ids, ['kitchen_ceiling.light', 'light_a.light']);
    assert.deepEqual(acted('lights on', 'Kitchen').ids, ['kitchen_ceiling.light']);
    assert.notDeepEqual(acted('make the lights red').ids, ['light_a.light']);
  });

  it('one thing said that is several asks which; a plural acts on all of them', () => {
    assert.deepEqual(acted('lock the door'), { ids: [], reply: 'ambiguous' });
    assert.deepEqual(acted('lock the doors').ids, ['back_door.lock', 'front_door.lock']);
    assert.deepEqual(acted('unlock all the doors').ids, ['back_door.lock', 'front_door.lock']);
  });

  it('lighting words act on lights only: "light up the kitchen" leaves its fan and coffee maker alone', () => {
    assert.deepEqual(acted('light up the kitchen').ids, ['kitchen_ceiling.light']);
  });

  it('a sentence from a room, with no other place said, means that room', () => {
    assert.deepEqual(acted('fans on', 'Kitchen').ids, ['kitchen_fan.fan']);
    assert.deepEqual(acted('open the curtains', 'Kitchen').ids, ['kitchen_curtains.cover']);
    // Another place said wins over the speaker's room; no room: the whole home.
    assert.deepEqual(acted('open the curtains in the bedroom', 'Kitchen').ids, ['bedroom_curtains.cover']);
    assert.deepEqual(acted('open the curtains').ids, ['bedroom_curtains.cover', 'kitchen_curtains.cover']);
  });

  // "First floor" is one up in a British home and at ground level in an American one. The home's own floor
  // names say which (a ground floor, or a first floor at the bottom); with no sign, it names no floor.
  it('numbered floors are read the way the home counts them, and never guessed', () => {
    const homeWith = (lower: string, upper: string, sentences?: SentenceSet) => {
      const light = (id: string, floor: string) =>
        `  - { id: ${id}, name: ${id} lamp, floor: ${floor}, entities: { light: { kind: light, name: ${id} lamp, state_topic: t/${id}, command_topic: t/${id}/set } } }`;
      const parsed = parseDeviceFile('floors.yaml', `devices:\n${light('low', lower)}\n${light('high', upper)}\n`);
      if (!('devices' in parsed)) throw new Error(JSON.stringify(parsed.problems));
      const es = parsed.devices.flatMap((d) => d.entities);
      const gen = generateTools(es, { shape: 'per-entity', groupAbove: 40 }, async () => ({}));
      const m = new IntentProvider({ entities: () => es, tools: () => gen.tools, sentences });
      const n = toolSpecs(gen.tools).map((s) => s.function.name);
      return (text: string) => {
        const r = m.understand(text, n);
        return r.calls.length ? r.calls.map((c) => c.tool).sort() : [r.reply?.type];
      };
    };
    const british = homeWith('Ground floor', 'Upstairs');
    assert.deepEqual(british('first floor lights off'), ['high_lamp']);
    assert.deepEqual(british('downstairs lights off'), ['low_lamp']);
    const american = homeWith('First floor', 'Second floor');
    assert.deepEqual(american('upstairs lights off'), ['high_lamp']);
    assert.deepEqual(american('ground floor lights off'), ['low_lamp']);
    assert.deepEqual(american('first floor lights off'), ['low_lamp']);
    const unsaid = homeWith('Downstairs', 'Upstairs');
    assert.deepEqual(unsaid('upstairs lights off'), ['high_lamp']);
    assert.notDeepEqual(unsaid('first floor lights off'), ['high_lamp']);
    assert.notDeepEqual(unsaid('first floor lights off'), ['low_lamp']);
    // The home's owner says how they count (docs/sentences.md): their `floor` list replaces the shipped one.
    const dir = mkdtempSync(join(tmpdir(), 'hearth-floors-'));
    try {
      writeFileSync(
        join(dir, 'floors.yaml'),
        'language: en\nlists:\n  floor:\n    values:\n      - in: "(downstairs|ground floor)"\n        out: downstairs\n      - in: "(upstairs|upper floor)"\n        out: upstairs\n      - in: "first floor"\n        out: downstairs\n',
      );
      const owned = homeWith('Downstairs', 'Upstairs', new SentenceSet({ userDir: dir }));
      assert.deepEqual(owned('first floor lights off'), ['low_lamp']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a bare kind is not what is left of a name: "turn on the fan" is the fan, never the "Fan light"; a gate is not a door', () => {
    const parsed = parseDeviceFile(
      'traps.yaml',
      `devices:
  - { id: fan_light, name: Fan light, area: Bedroom, entities: { light: { kind: light, name: Fan light, state_topic: t/fl, command_topic: t/fl/set } } }
  - { id: bedroom_fan, name: Bedroom fan, area: Bedroom, entities: { fan: { kind: fan, name: Bedroom fan, state_topic: t/bf, command_topic: t/bf/set } } }
  - { id: garage, name: Garage door, area: Garage, entities: { cover: { kind: cover, device_class: garage, name: Garage door, state_topic: t/gd, command_topic: t/gd/set } } }
  - { id: gate, name: Driveway gate, area: Garden, entities: { cover: { kind: cover, device_class: gate, name: Driveway gate, state_topic: t/g, command_topic: t/g/set } } }
  - { id: heater, name: Heater switch, area: Garage, entities: { switch: { kind: switch, name: Heater switch, state_topic: t/h, command_topic: t/h/set } } }
`,
    );
    if (!('devices' in parsed)) throw new Error(JSON.stringify(parsed.problems));
    const es = parsed.devices.flatMap((d) => d.entities);
    const gen = generateTools(es, { shape: 'per-entity', groupAbove: 40 }, async () => ({}));
    const m = new IntentProvider({ entities: () => es, tools: () => gen.tools });
    const n = toolSpecs(gen.tools).map((x) => x.function.name);
    const tools = (text: string) => m.understand(text, n).calls.map((c) => c.tool);
    assert.deepEqual(tools('turn on the fan'), ['bedroom_fan']);
    assert.deepEqual(tools('turn on the fans'), ['bedroom_fan']);
    assert.deepEqual(tools('turn off the fan light'), ['fan_light']);
    assert.deepEqual(tools('close all the doors'), ['garage_door']);
    assert.deepEqual(tools('close the gate'), ['driveway_gate']);
    // A switch called a heater is still found as one.
    assert.deepEqual(tools('turn on the heater'), ['heater_switch']);
  });
});
