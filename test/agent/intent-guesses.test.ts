// Issue 28, "acts on a guess": sentences that switched the wrong thing. On a home with the traps (a light called
// "Light A", two locks and a door contact, fans and a switch beside the kitchen's light, curtains in two rooms):
// a bare kind is not a name; one thing said that is several asks which; lighting words act on lights; a
// sentence from a room means that room.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IntentProvider } from '../../src/agent/providers/intent/index.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
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
});
