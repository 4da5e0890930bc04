// What a model is told of a tool's arguments, and what the host still checks (tools/model-schema.ts): the specs
// an agent session sends leave out the keywords that only guard the host (string and list bounds,
// `additionalProperties: false`: ~340 tokens of every request in a grouped set), and a call that breaks one of
// them is refused with a readable error and nothing sent, as before. The demo home on aedes, both shapes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseDeviceFile } from '../../src/devices/loader.js';
import { generateTools, toolSpecs } from '../../src/tools/generator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { OWNER, startHome, type TestHome } from '../helpers/home.js';

const HOST_ONLY = ['maxLength', 'minLength', 'maxItems', 'minItems', 'uniqueItems', 'additionalProperties'];

/** Every keyword of a schema, with where it is (`control_lights.properties.entity.maxLength`). */
function keywords(value: unknown, at: string, out: string[] = []): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return out;
  for (const [k, v] of Object.entries(value)) {
    out.push(`${at}.${k}`);
    keywords(v, `${at}.${k}`, out);
  }
  return out;
}

for (const shape of ['grouped', 'per-entity'] as const) {
  describe(`the arguments a model is told and the ones the host checks (${shape})`, () => {
    let broker: TestBroker;
    let home: TestHome;
    const sent = () => home.seen.filter((m) => /\/(set|command)$/.test(m.topic)).length;

    before(async () => {
      broker = await startAedes();
      home = await startHome(broker, { shape });
    });
    after(async () => {
      await home?.close();
      await broker?.stop();
    });

    it('the specs a model gets carry no bound that only guards the host, and keep what it needs', () => {
      const offered = home.hearth.tools.forPrincipal(OWNER);
      const specs = toolSpecs(offered);
      const found = specs.flatMap((s) => keywords(s.function.parameters, s.function.name)).filter((k) => HOST_ONLY.some((w) => k.endsWith(`.${w}`)));
      assert.deepEqual(found, []);
      const lightTool = offered.find((t) => t.meta.kinds.includes('light') && t.capability === 'actuator' && !t.meta.group)!;
      const lights = specs.find((s) => s.function.name === `host__${lightTool.name}`)!;
      const props = lights.function.parameters.properties as Record<string, { minimum?: number; maximum?: number; enum?: string[] }>;
      // Ranges and choices a model chooses from stay.
      assert.equal(props.brightness_pct!.maximum, 100);
      assert.ok(props.action!.enum!.includes('turn_on'));
    });

    it('an entity id longer than the host takes is refused, naming the argument, and nothing is sent', async () => {
      const tool = home.hearth.tools.forPrincipal(OWNER).find((t) => t.meta.kinds.includes('light') && t.capability === 'actuator' && !t.meta.group)!;
      const before = sent();
      const args: Record<string, unknown> = { action: 'turn_on' };
      if ('entity' in (tool.parameters.properties as object)) args.entity = `light.${'x'.repeat(300)}`;
      else args.color = 'x'.repeat(300);
      const r = await home.hearth.tools.call(tool.name, args, OWNER);
      assert.equal(r.isError, true, r.text);
      assert.match(r.text!, /"(entity|color)".*(200|32|characters|long)/i);
      assert.equal(sent(), before);
    });

    it('an argument the tool does not take is refused, naming it, and nothing is sent', async () => {
      const tool = home.hearth.tools.forPrincipal(OWNER).find((t) => t.meta.kinds.includes('light') && t.capability === 'actuator' && !t.meta.group)!;
      const before = sent();
      const args: Record<string, unknown> = { action: 'turn_on', flash_speed: 'fast' };
      if ('entity' in (tool.parameters.properties as object)) args.entity = tool.meta.entityIds[0];
      const r = await home.hearth.tools.call(tool.name, args, OWNER);
      assert.equal(r.isError, true, r.text);
      assert.match(r.text!, /flash_speed/);
      assert.equal(sent(), before);
    });
  });
}

describe('a grouped tool over members of different units', () => {
  const FILE = `devices:
  - id: heater
    name: Heater
    entities:
      limit: { kind: number, name: Heater limit, unit: "°C", state_topic: t/limit, command_topic: t/limit/set, ranges: { value: { min: 10, max: 30, step: 1 } } }
      frost: { kind: number, name: Frost guard, unit: "°C", state_topic: t/frost, command_topic: t/frost/set, ranges: { value: { min: 3, max: 8, step: 1 } } }
  - id: kettle
    name: Kettle
    entities:
      countdown: { kind: number, name: Kettle countdown, unit: s, state_topic: k/countdown, command_topic: k/countdown/set, ranges: { value: { min: 0, max: 3600, step: 1 } } }
`;
  const numbersOf = (yaml: string) => {
    const parsed = parseDeviceFile('home.yaml', yaml);
    assert.ok('devices' in parsed, JSON.stringify(parsed));
    const { tools } = generateTools(
      parsed.devices.flatMap((d) => d.entities),
      { shape: 'grouped', groupAbove: 40 },
      async () => ({ text: '' }),
    );
    return (tools.find((t) => t.name === 'control_numbers')!.parameters.properties as Record<string, { description: string }>).value.description;
  };

  it('says no unit when its members differ (the kettle counts seconds, not °C), and the shared one when they agree', () => {
    assert.equal(numbersOf(FILE), 'New value; per-device range.');
    assert.equal(numbersOf(FILE.split('  - id: kettle')[0]!), 'New value in °C; per-device range.');
  });
});
