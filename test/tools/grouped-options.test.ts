// Grouped tools take an entity's options as free words (their schemas must not grow with the home,
// #31): the demo home through the grouped shape, on a real broker. An option is checked against the
// entity's own at call time, with an error naming the valid ones; find_entities says them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { OWNER, startHome, type TestHome } from '../helpers/home.js';

describe('grouped option arguments', () => {
  let broker: TestBroker;
  let home: TestHome;
  const call = (tool: string, args: Record<string, unknown>) => home.hearth.tools.call(tool, args, OWNER);

  before(async () => {
    broker = await startAedes();
    home = await startHome(broker, { shape: 'grouped' });
  });
  after(async () => {
    await home?.close();
    await broker?.stop();
  });

  it('schemas list no entity ids and no per-entity options, only the kind’s actions', () => {
    const vacuums = home.hearth.tools.get('control_vacuums')!;
    const props = vacuums.parameters.properties as Record<string, { enum?: string[]; type?: string }>;
    assert.equal(props.entity.enum, undefined);
    assert.equal(props.fan_speed.enum, undefined);
    assert.equal(props.fan_speed.type, 'string');
    assert.ok(props.action.enum!.includes('return_to_base'));
    const climate = home.hearth.tools.get('control_climate')!.parameters.properties as Record<string, { enum?: string[] }>;
    assert.equal(climate.mode.enum, undefined);
    assert.equal((home.hearth.tools.get('get_state')!.parameters.properties as Record<string, { enum?: string[] }>).entity.enum, undefined);
  });

  it("an option the entity does not have is refused with the entity's own, and nothing is sent", async () => {
    const before = home.seen.length;
    const bad = await call('control_vacuums', { entity: 'robot_vacuum.vacuum', action: 'set_fan_speed', fan_speed: 'turbo' });
    assert.equal(bad.isError, true);
    assert.match(bad.text!, /"fan_speed" must be one of quiet, standard, max \(got turbo\)/);
    const mode = await call('control_climate', { entity: 'thermostat.climate', action: 'set_mode', mode: 'dry' });
    assert.equal(mode.isError, true);
    assert.match(mode.text!, /"mode" must be one of /);
    assert.equal(home.seen.slice(before).filter((m) => m.topic.endsWith('/set') || m.topic.endsWith('/command')).length, 0);
  });

  it('a valid one goes through; find_entities says the choices', async () => {
    assert.match(
      (await call('control_vacuums', { entity: 'robot_vacuum.vacuum', action: 'set_fan_speed', fan_speed: 'standard' })).text!,
      /^confirmed: .*fan speed standard/,
    );
    const found = await call('find_entities', { query: 'vacuum' });
    assert.match(found.text!, /robot_vacuum\.vacuum: "Robot vacuum", vacuum, area "Living room"; use control_vacuums; fan_speed one of quiet, standard, max/);
  });
});
