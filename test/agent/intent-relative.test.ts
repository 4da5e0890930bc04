// Issue 42's two wrong things, as regressions: a relative word ("a bit", "dimmer", "turn the heating down")
// changes the current value by a step and never jumps to an end of the range (dimming a light that is off,
// or whose brightness is not known, is said instead of done); and an answer says every property the call
// changed ("warm white", not only "on at 100%"), and which way a step went ("Dimmed the kitchen light to 40%").
// Round 1 on the demo home and the two-floor home with their states; round 2 on the results the pipeline
// writes (stateText of the state the device echoes).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatMessage, ProviderEvent } from '../../src/agent/provider.js';
import { IntentProvider } from '../../src/agent/providers/intent/provider.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { Entity } from '../../src/devices/model.js';
import type { EntityState } from '../../src/devices/state-cache.js';
import { generateTools, toolSpecs } from '../../src/tools/generator.js';
import { stateText } from '../../src/tools/state-text.js';

const DEMO = loadDeviceFiles([new URL('../../devices/demo', import.meta.url).pathname]).devices.flatMap((d) => d.entities);
const FLOORS = loadDeviceFiles([new URL('../fixtures/homes/floors.yaml', import.meta.url).pathname]).devices.flatMap((d) => d.entities);
const AT = 1_700_000_000_000;

type Attributes = EntityState['attributes'];
type States = Record<string, { value?: string; attributes?: Attributes }>;

function home(entities: Entity[], states: States) {
  const { tools } = generateTools(entities, { shape: 'grouped', groupAbove: 0 }, async () => ({}));
  const cache = new Map<string, EntityState>(
    Object.entries(states).map(([id, s]) => [
      id,
      { entityId: id, value: s.value, attributes: s.attributes ?? {}, updatedAt: AT - 5000, available: true } as EntityState,
    ]),
  );
  const provider = new IntentProvider({ entities: () => entities, tools: () => tools, state: (id) => cache.get(id) });
  const names = toolSpecs(tools).map((t) => t.function.name);
  const byId = new Map(entities.map((e) => [e.id, e]));
  /** Round 1: the calls (or the reply) for a sentence. */
  const understand = (text: string) => provider.understand(text, names);
  /** Rounds 1 and 2: the sentence's one call, confirmed by the device now reporting `after`; the answer. */
  async function answer(text: string, after: { value: string; attributes?: Attributes }): Promise<{ args: Record<string, unknown>; text: string }> {
    const specs = toolSpecs(tools);
    const first: ProviderEvent[] = [];
    for await (const e of provider.stream({
      model: 'hearth-intent',
      messages: [{ role: 'user', content: text }],
      tools: specs,
      signal: new AbortController().signal,
    }))
      first.push(e);
    const done = first.at(-1);
    assert.ok(done?.type === 'done' && done.toolCalls.length === 1, `${text}: one call`);
    const call = done.toolCalls[0];
    const args = JSON.parse(call.arguments) as Record<string, unknown>;
    const id = String(args.entity);
    const echoed = stateText(byId.get(id)!, { entityId: id, value: after.value, attributes: after.attributes ?? {}, updatedAt: AT - 100, available: true }, AT);
    const messages: ChatMessage[] = [
      { role: 'user', content: text },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: `confirmed: ${echoed} (reported 90 ms after the command)` },
    ];
    let said = '';
    for await (const e of provider.stream({ model: 'hearth-intent', messages, tools: specs, signal: new AbortController().signal }))
      if (e.type === 'token') said += e.text;
    return { args, text: said };
  }
  return { understand, answer };
}

/** The brightness a call sets: its tool takes percent (brightness_pct). */
const percent = (args: Record<string, unknown>) => Number(args.brightness_pct);

describe('intent model: relative changes step from the current value (issue 42)', () => {
  it('"could you dim the kitchen a bit" from 50% dims to 40%, and says so', async () => {
    const h = home(DEMO, { 'kitchen_light.light': { value: 'on', attributes: { brightness: 127 } } });
    const r = await h.answer('could you dim the kitchen a bit', { value: 'on', attributes: { brightness: 102 } });
    assert.equal(r.args.action, 'turn_on');
    assert.equal(percent(r.args), 40);
    assert.equal(r.text, 'Dimmed the kitchen light to 40%.');
    const more = await h.answer('make the kitchen light brighter', { value: 'on', attributes: { brightness: 191 } });
    assert.equal(percent(more.args), 75);
    assert.equal(more.text, 'Brightened the kitchen light to 75%.');
  });

  it('a step never jumps to an end: a lot dimmer stops at the small step, a dim light goes to its lowest', () => {
    const half = home(DEMO, { 'kitchen_light.light': { value: 'on', attributes: { brightness: 127 } } });
    assert.equal(percent(half.understand('make the kitchen light a lot dimmer').calls[0].args), 10);
    assert.equal(percent(half.understand('dim the kitchen light a little').calls[0].args), 40);
    assert.equal(percent(half.understand('dim the kitchen light more').calls[0].args), 25);
    const low = home(DEMO, { 'kitchen_light.light': { value: 'on', attributes: { brightness: 20 } } });
    assert.equal(percent(low.understand('dim the kitchen a bit').calls[0].args), 1);
  });

  it('dimming a light that is off, or whose brightness is unknown, is said and not done (it set 1% before)', () => {
    const off = home(DEMO, { 'kitchen_light.light': { value: 'off' } }).understand('could you dim the kitchen a bit');
    assert.deepEqual(off.calls, []);
    assert.match(off.text ?? '', /can't dim the kitchen light: it is off/);
    const unknown = home(DEMO, {}).understand('make the kitchen light brighter');
    assert.deepEqual(unknown.calls, []);
    assert.match(unknown.text ?? '', /brightness is not known yet/);
    // Brightening a light that is off turns it on at a step, not at full.
    const on = home(DEMO, { 'kitchen_light.light': { value: 'off' } }).understand('make the kitchen light a bit brighter');
    assert.equal(percent(on.calls[0].args), 10);
  });

  it('a cover steps from its position: "open the garage door a bit", "close it a lot" (from halfway, a lot closes it)', () => {
    const h = home(DEMO, { 'garage_door.door': { value: 'open', attributes: { position: 50 } } });
    const position = (text: string) => {
      const r = h.understand(text);
      assert.equal(r.calls.length, 1, `${text}: ${r.text}`);
      assert.equal(r.calls[0].args.action, 'set_position', text);
      return r.calls[0].args.position;
    };
    assert.equal(position('open the garage door a bit'), 60);
    assert.equal(position('lower the garage door a little'), 40);
    assert.equal(position('open the garage door a bit more'), 60);
    assert.equal(position('close the garage door a lot'), 0);
    assert.equal(position('raise the garage door a lot more'), 100);
    // Where it is not known, said and not done.
    const unknown = home(DEMO, {}).understand('open the garage door a bit');
    assert.deepEqual(unknown.calls, []);
    assert.match(unknown.text ?? '', /position is not known yet/);
  });

  it('thermostat targets, fan speeds and whites step the same way, and say which way', async () => {
    const h = home(FLOORS, {
      'office_thermostat.climate': { value: 'heat', attributes: { temperature: 20, current_temperature: 19 } },
      'kitchen_fan.fan': { value: 'on', attributes: { percentage: 40 } },
      'guest_light.light': { value: 'on', attributes: { brightness: 200, color_temp: 4000 } },
    });
    const down = await h.answer('turn the office thermostat down a bit', { value: 'heat', attributes: { temperature: 19.5, current_temperature: 19 } });
    assert.equal(down.args.temperature, 19.5);
    assert.equal(down.text, 'Turned the office thermostat down to 19.5 °C.');
    assert.equal(h.understand('set the office thermostat a lot higher').calls[0].args.temperature, 22);
    assert.equal(h.understand('turn the heating up in the office').calls[0].args.temperature, 21);
    const slower = await h.answer('make the kitchen fan a bit slower', { value: 'on', attributes: { percentage: 30 } });
    assert.equal(slower.args.percentage, 30);
    assert.match(slower.text, /^Turned the kitchen fan down to 30/);
    assert.equal(h.understand('make the kitchen fan a lot slower').calls[0].args.percentage, 10);
    const warmer = await h.answer('make the guest room light a little warmer', { value: 'on', attributes: { brightness: 200, color_temp: 3750 } });
    assert.equal(warmer.args.color_temp_kelvin, 3750);
    assert.equal(warmer.text, 'Made the guest room light warmer: neutral white (about 3800 K).');
  });
});

describe('intent model: an answer says every property it changed (issue 42)', () => {
  const h = home(DEMO, { 'kitchen_light.light': { value: 'on', attributes: { brightness: 254 } } });

  it('"make the kitchen light warm white" says the white, not only "on at 100%"', async () => {
    const r = await h.answer('make the kitchen light warm white', { value: 'on', attributes: { brightness: 254, color_temp: 370, color_mode: 'color_temp' } });
    assert.equal(r.args.color_temp_kelvin, 2700);
    assert.equal(r.text, 'Done: the kitchen light is warm white (about 2700 K).');
  });

  it('a colour or a white with a brightness says both', async () => {
    const white = await h.answer('set the kitchen light to 2700 K at 30%', {
      value: 'on',
      attributes: { brightness: 76, color_temp: 370, color_mode: 'color_temp' },
    });
    assert.equal(white.text, 'Done: the kitchen light is warm white (about 2700 K) at 30%.');
    const red = await h.answer('set the kitchen light to red at 50%', {
      value: 'on',
      attributes: { brightness: 127, color_x: 0.7, color_y: 0.3, color_mode: 'xy' },
    });
    assert.equal(red.text, 'Done: the kitchen light is red at 50%.');
  });
});
