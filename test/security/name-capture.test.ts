// Issue 27: a discovered switch named "All the lights" took "turn off all the lights", and two devices named
// "Kitchen light" could not be told apart. A name never captures a built-in group phrase (it is known with its
// kind after it), and the registry makes duplicate names distinct (area, else a number), by rank, so they stay.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { IntentProvider } from '../../src/agent/providers/intent/index.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import { DeviceRegistry, FILE_SOURCE } from '../../src/devices/registry.js';
import { generateTools, toolSpecs } from '../../src/tools/generator.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-names-'));
after(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  join(dir, 'extra.yaml'),
  `devices:
  - id: party_switch
    name: All the lights
    area: Garage
    entities:
      relay:
        kind: switch
        name: All the lights
        state_topic: extra/party
        command_topic: extra/party/set
  - id: hall_light
    name: Kitchen light
    area: Hallway
    entities:
      light:
        kind: light
        name: Kitchen light
        state_topic: extra/hall
        command_topic: extra/hall/set
`,
);

const loaded = loadDeviceFiles([new URL('../../devices/demo', import.meta.url).pathname, join(dir, 'extra.yaml')]);
const registry = new DeviceRegistry();
registry.setSource(FILE_SOURCE, 0, loaded.devices);
const entities = registry.entities();
const { tools } = generateTools(entities, { shape: 'per-entity', groupAbove: 40 }, async () => ({}));
const names = toolSpecs(tools).map((s) => s.function.name);
const model = new IntentProvider({ entities: () => entities, tools: () => tools });

describe('security: a device name never captures a group phrase, and duplicates are told apart', () => {
  it('two "Kitchen light"s: the first ranked keeps the name, the other gets its area', () => {
    const kitchen = entities.filter((e) => /^Kitchen light/.test(e.name)).map((e) => [e.id, e.name]);
    // Device files rank by id: hall_light first.
    assert.deepEqual(kitchen.sort(), [
      ['hall_light.light', 'Kitchen light'],
      ['kitchen_light.light', 'Kitchen light (Kitchen)'],
    ]);
  });

  it('"turn off all the lights" means the lights, not the switch named "All the lights"', () => {
    const r = model.understand('turn off all the lights', names);
    const touched = JSON.stringify(r.calls);
    assert.ok(r.calls.length > 0, JSON.stringify(r));
    assert.doesNotMatch(touched, /party_switch|all_the_lights/);
    assert.match(touched, /kitchen_light/);
    // It is still reachable by its name with its kind.
    const own = model.understand('turn off the all the lights switch', names);
    assert.deepEqual(
      own.calls.map((c) => c.tool),
      [tools.find((t) => t.meta.entityIds[0] === 'party_switch.relay')!.name],
    );
  });
});
