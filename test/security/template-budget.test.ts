// Issue 15, finding 7: a Home Assistant discovery config carries Jinja
// templates, and a template could build strings of hundreds of millions of
// characters through `~`, `+` and filters, or loop for seconds. Every render
// now has a step budget and a size budget on every intermediate value; a
// render over budget fails with an error naming the limit and is treated as
// any failed render: a command template that cannot be rendered leaves the
// entity without commands, a value template that fails skips that payload, a
// per-call command template fails that call and publishes nothing. The sizes
// here are kept small enough that the code before the fix finishes them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Entity } from '../../src/devices/model.js';
import { actuatorTool, OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

/** Doubling a string 18 times: 2^18 times its length, over the 256 Ki-character limit. */
const DOUBLE_TILDE = '{% set s = value %}{% for i in range(18) %}{% set s = s ~ s %}{% endfor %}{{ s }}';
const DOUBLE_PLUS = '{% set s = value | string %}{% for i in range(18) %}{% set s = s + s %}{% endfor %}{{ s }}';
const REPLACE = "{{ (value * 100000) | replace('O', 'OOOOOOOOOO') }}";
const JOIN = "{{ ([value * 100000] * 5) | join('') }}";
const LOOPS = '{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}{{ value }}';

const text = (r: unknown) => (typeof r === 'string' ? r : ((r as { text?: string }).text ?? ''));

describe('template budgets', () => {
  const home = useHome();

  const announce = (component: string, id: string, config: Record<string, unknown>) =>
    home.device.publishAsync(`homeassistant/${component}/${id}/config`, JSON.stringify({ unique_id: id, ...config }), { qos: 1, retain: true });
  const discovered = (id: string, stateTopic: string) =>
    waitFor<Entity>(`${id} discovered`, () => home.hearth.bridge.registry.entities().find((e) => e.stateTopic === stateTopic));
  const warned = (topic: string, msg: RegExp) =>
    waitFor(`a log line on ${topic} matching ${msg}`, () => home.logs.lines.find((l) => l.topic === topic && msg.test(l.msg)));
  const hasActuator = (entityId: string) => home.hearth.tools.all().some((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entityId));

  it('command templates that blow up through ~, +, filters or loops leave the switch without commands', async () => {
    const bombs = { tilde: DOUBLE_TILDE, plus: DOUBLE_PLUS, replace: REPLACE, join: JOIN, loops: LOOPS };
    for (const [name, template] of Object.entries(bombs)) {
      await announce('switch', `bomb_${name}`, {
        name: `Bomb ${name}`,
        state_topic: `bomb/${name}/state`,
        command_topic: `bomb/${name}/set`,
        command_template: template,
      });
    }
    const limits: Record<string, RegExp> = {
      tilde: /command template .* failed: the result of '~' would be too long: \d+ characters, over the 262144-character limit/,
      plus: /command template .* failed: the result of '\+' would be too long/,
      replace: /command template .* failed: the replaced text would be too long/,
      join: /command template .* failed: the joined text would be too long/,
      loops: /command template .* failed: template (took too many steps|needs too much work)/,
    };
    for (const name of Object.keys(bombs)) {
      const entity = await discovered(`bomb_${name}`, `bomb/${name}/state`);
      await warned(`homeassistant/switch/bomb_${name}/config`, limits[name]);
      assert.equal(hasActuator(entity.id), false, `${name}: no tool may send its payload`);
    }
    const lamp = await home.hearth.tools.call(actuatorTool(home.hearth, 'living_room_lamp.lamp').name, { action: 'turn_on' }, OWNER);
    assert.match(text(lamp), /^confirmed/);
  });

  it('a value template over budget skips that payload with the reason, and the sensor keeps its value', async () => {
    await announce('sensor', 'bomb_value', {
      name: 'Bomb value',
      state_topic: 'bomb/value',
      value_template: `{% if value == 'ok' %}{{ 7 }}{% else %}${DOUBLE_TILDE.replace('{{ s }}', '{{ s | length }}')}{% endif %}`,
    });
    const sensor = await discovered('bomb_value', 'bomb/value');
    await home.device.publishAsync('bomb/value', 'ok', { qos: 1 });
    await waitFor('the first reading', () => home.hearth.bridge.cache.get(sensor.id)?.value === 7);
    await home.device.publishAsync('bomb/value', 'ab', { qos: 1 });
    const line = await warned('bomb/value', /skipped a payload: template .* failed: the result of '~' would be too long/);
    assert.equal(line.reason, 'bad_value');
    assert.equal(home.hearth.bridge.cache.get(sensor.id)?.value, 7);
  });

  it('a per-call command template over budget fails that call with the reason and publishes nothing', async () => {
    await announce('number', 'bomb_number', {
      name: 'Bomb number',
      state_topic: 'bomb/number',
      command_topic: 'bomb/number/set',
      min: 0,
      max: 100,
      // The value is one character: 2^20 of it is over the limit.
      command_template: DOUBLE_TILDE.replace('range(18)', 'range(20)'),
    });
    const number = await discovered('bomb_number', 'bomb/number');
    await home.device.publishAsync('bomb/number', '1', { qos: 1, retain: true });
    await waitFor('the number reading', () => home.hearth.bridge.cache.get(number.id)?.value === 1);
    const tool = actuatorTool(home.hearth, number.id);
    const result = await home.hearth.tools.call(tool.name, { value: 5 }, OWNER);
    assert.match(text(result), /would be too long/);
    assert.ok(typeof result !== 'string' && result.isError, text(result));
    assert.deepEqual(
      home.seen.filter((m) => m.topic === 'bomb/number/set'),
      [],
    );
  });
  it('a topic that keeps a template at its budget is bounded per second: later payloads are skipped as over_budget, calls go on (issue 27)', async () => {
    // Each render walks a large payload many times: well inside one render's budget, heavy a hundred times over.
    await announce('sensor', 'heavy_value', {
      name: 'Heavy value',
      state_topic: 'bomb/heavy',
      value_template: '{% for i in range(12) %}{% set n = value | length %}{% endfor %}{{ value | length }}',
    });
    const sensor = await discovered('heavy_value', 'bomb/heavy');
    const big = 'x'.repeat(240 * 1024);
    for (let i = 0; i < 150; i++) home.device.publish('bomb/heavy', big, { qos: 0 });
    await home.device.publishAsync('bomb/heavy', 'last', { qos: 1 });
    const line = await warned('bomb/heavy', /template work on bomb\/heavy is over its budget/);
    assert.equal(line.reason, 'over_budget');
    assert.equal(typeof home.hearth.bridge.cache.get(sensor.id)?.value, 'number', 'the renders that fit the budget still counted');
    const lamp = await home.hearth.tools.call(actuatorTool(home.hearth, 'living_room_lamp.lamp').name, { action: 'turn_off' }, OWNER);
    assert.match(text(lamp), /^confirmed/);
  });
});
