// The pieces of Home Assistant discovery on their own: the template subset,
// topic parsing, schema coercion, slugs and names.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { entityName, jsonDepth, slugDeviceId, slugKey } from '../../src/devices/discovery/homeassistant/adapter.js';
import { type Invalid, migrateFlag, validateComponent } from '../../src/devices/discovery/homeassistant/schema.js';
import { compileTemplate, renderStripped, RenderError, TemplateError } from '../../src/devices/discovery/homeassistant/templates.js';
import { parseDiscoveryTopic } from '../../src/devices/discovery/homeassistant/topics.js';

const render = (source: string, vars: Record<string, unknown> = {}) => renderStripped(compileTemplate(source), vars);

describe('value templates', () => {
  test('the common simple forms become JSON paths (no evaluation at all)', () => {
    assert.deepEqual(compileTemplate('{{ value_json.x }}').simple, { kind: 'path', path: 'x' });
    assert.deepEqual(compileTemplate("{{ value_json['a'].b }}").simple, { kind: 'path', path: 'a.b' });
    assert.deepEqual(compileTemplate('{{value_json["temperature"]}}').simple, { kind: 'path', path: 'temperature' });
    assert.deepEqual(compileTemplate("{{ value_json['key with space'][0] }}").simple, { kind: 'path', path: "['key with space'][0]" });
    assert.deepEqual(compileTemplate('{{ value }}').simple, { kind: 'value' });
    assert.deepEqual(compileTemplate('{{ "offline" }}').simple, { kind: 'constant', text: 'offline' });
    assert.equal(compileTemplate('{{ value | float }}').simple, undefined);
  });

  test('filters: float, round, int, default, lower, multiply, join, tojson', () => {
    assert.equal(render('{{ value | float }}', { value: '23.20' }), '23.2');
    assert.equal(render('{{ value | float | round(1) }}', { value: '21.456' }), '21.5');
    assert.equal(render('{{ value | round }}', { value: '2.5' }), '2', 'Python rounds half to even');
    assert.equal(render('{{ value | int }}', { value: '23.7' }), '23');
    assert.equal(render('{{ value | int(0) }}', { value: 'n/a' }), '0');
    assert.equal(render("{{ value_json.missing | default('None') }}", { value_json: {} }), 'None');
    assert.equal(render('{{ value_json.on | lower }}', { value_json: { on: true } }), 'true');
    assert.equal(render('{{ value_json.b | float | multiply(2.55) | round }}', { value_json: { b: 100 } }), '255');
    assert.equal(render("{{ value_json.rgb | join(',') }}", { value_json: { rgb: [1, 2, 3] } }), '1,2,3');
    assert.equal(render('{{ {"a": [1, true, none]} | tojson }}'), '{"a": [1, true, null]}');
    assert.equal(render('{{ {"a": 1} | to_json }}'), '{"a":1}');
    assert.throws(() => render('{{ value | float }}', { value: 'abc' }), RenderError, 'float without a default fails, as in HA');
  });

  test('Python rendering and semantics', () => {
    assert.equal(render('{{ value_json.x }}', { value_json: { x: true } }), 'True');
    assert.equal(render('{{ value_json.x }}', { value_json: { x: null } }), 'None');
    assert.equal(render("{{ ['a', 1] }} {{ {'k': none} }}"), "['a', 1] {'k': None}");
    assert.equal(render('{{ 7 // 2 }} {{ -7 % 3 }} {{ 1 / 2 }} {{ 2 ** 3 }} {{ "a" ~ 1 }}'), '3 2 0.5 8 a1');
    assert.equal(render("{{ 'x' if value_json.v == 0 else 'y' }}", { value_json: { v: 0 } }), 'x');
    assert.equal(render("{{ value_json.m if value_json.m in ['smart'] else 'None' }}", { value_json: { m: 'low' } }), 'None');
    assert.equal(render('{% if value_json.a %}ON{% else %}OFF{% endif %}', { value_json: { a: [] } }), 'OFF');
    assert.equal(render('{% set v = {None: "none", "heat": "heating"} %}{{ v[value_json.s] }}', { value_json: { s: null } }), 'none');
    assert.equal(render('{% for x in value_json %}{{ loop.index }}{{ x }}{% if loop.last %}!{% endif %}{% endfor %}', { value_json: ['a', 'b'] }), '1a2b!');
    assert.equal(render('{{ value_json.get("p", "null") }}', { value_json: {} }), 'null');
    assert.equal(render('{{ value_json.params.events.0.id }}', { value_json: { params: { events: [{ id: 4 }] } } }), '4');
    assert.equal(render("{{ value | unpack('>H') }}", { value: Buffer.from([1, 2]) }), '258');
    assert.equal(render('{{ value_json.a is defined }} {{ value_json.b is not defined }}', { value_json: { a: 1 } }), 'True True');
    assert.equal(render('{{- " x " -}}'), 'x');
  });

  test('missing data: an undefined renders empty; looking inside it fails', () => {
    assert.equal(render('{{ value_json.hc1.currtemp }}', { value_json: { hc1: {} } }), '');
    assert.throws(() => render('{{ value_json.a.b }}', { value_json: {} }), RenderError);
    assert.throws(() => render('{{ value_json.x }}', {}), RenderError, 'no JSON payload: value_json is undefined, and HA fails too');
  });

  test('what it cannot evaluate fails at compile time with the construct named', () => {
    const reason = (source: string) => {
      try {
        compileTemplate(source);
        return 'compiled';
      } catch (err) {
        assert.ok(err instanceof TemplateError);
        return err.message;
      }
    };
    assert.match(reason("{{ states('sensor.x') }}"), /function 'states' is not supported/);
    assert.match(reason("{{ value | regex_replace('a', 'b') }}"), /filter 'regex_replace' is not supported/);
    assert.match(reason('{% macro m() %}{% endmacro %}'), /macro/);
    assert.match(reason('{{ value_json.constructor.constructor("x")() }}'), /method 'constructor' is not supported/);
    assert.match(reason('{{ value_json.x '), /not closed/);
    assert.match(reason(`{{ ${'('.repeat(200)}1${')'.repeat(200)} }}`), /nested too deeply/);
  });

  test('evaluation is bounded and cannot reach JavaScript internals', () => {
    assert.throws(() => render('{% for a in range(10000) %}{% for b in range(10000) %}x{% endfor %}{% endfor %}'), /too many steps|over/);
    assert.equal(render('{{ value_json.constructor }}|{{ value_json.__proto__ }}|{{ value_json.toString }}', { value_json: {} }), '||');
    assert.equal(render("{{ value_json['__proto__'] }}", { value_json: JSON.parse('{"__proto__": 5}') }), '5');
    assert.throws(() => render("{{ 'x' * 10000000 }}"), /too long/);
  });
});

describe('discovery topics', () => {
  test('per component, with and without node_id, device-based, and a multi-level prefix', () => {
    assert.deepEqual(parseDiscoveryTopic('homeassistant', 'homeassistant/binary_sensor/bla/config'), {
      kind: 'discovery',
      component: 'binary_sensor',
      objectId: 'bla',
      discoveryId: 'bla',
    });
    assert.deepEqual(parseDiscoveryTopic('homeassistant', 'homeassistant/sensor/node-1/obj_1/config'), {
      kind: 'discovery',
      component: 'sensor',
      nodeId: 'node-1',
      objectId: 'obj_1',
      discoveryId: 'node-1 obj_1',
    });
    assert.equal(parseDiscoveryTopic('homeassistant', 'homeassistant/device/0AFFD2/config').kind, 'discovery');
    assert.equal(parseDiscoveryTopic('my_home/homeassistant/register', 'my_home/homeassistant/register/binary_sensor/node1/object1/config').kind, 'discovery');
    assert.equal(parseDiscoveryTopic('homeassistant', 'homeassistant/binary_sensor/rörkrökare/config').kind, 'illegal');
    assert.equal(parseDiscoveryTopic('homeassistant', 'homeassistant/binary_sensor/bla/state').kind, 'other');
    assert.equal(parseDiscoveryTopic('homeassistant', 'other/binary_sensor/bla/config').kind, 'other');
  });
});

describe('schema coercion, as Home Assistant does it', () => {
  test('numbers from strings, strings from booleans, ints from floats, booleans from words', () => {
    const climate = validateComponent('climate', { max_temp: '35', min_temp: '5', temp_step: 0.5, mode_command_topic: 'a/b' });
    assert.deepEqual([climate.max_temp, climate.min_temp, climate.temp_step], [35, 5, 0.5]);
    const bs = validateComponent('binary_sensor', {
      state_topic: 's',
      payload_on: true,
      payload_off: false,
      expire_after: 51840.0,
      enabled_by_default: 'true',
    });
    assert.deepEqual([bs.payload_on, bs.payload_off, bs.expire_after, bs.enabled_by_default], ['True', 'False', 51840, true]);
    const button = validateComponent('button', { command_topic: 'c', payload_press: '' });
    assert.equal(button.payload_press, '', 'an empty payload is kept');
  });

  test('unknown keys are dropped from configs, refused inside device and origin', () => {
    const s = validateComponent('sensor', { state_topic: 's', frobnicate: 1 });
    assert.ok(!('frobnicate' in s));
    assert.throws(
      () => validateComponent('sensor', { state_topic: 's', device: { identifiers: ['x'], frob: 1 } }),
      (err: Invalid) => /extra keys not allowed @ data\['device'\]\['frob'\]/.test(err.describe()),
    );
    assert.throws(
      () => validateComponent('sensor', { state_topic: 's', origin: { sw_version: '1' } }),
      (err: Invalid) => /required key not provided @ data\['origin'\]\['name'\]/.test(err.describe()),
    );
  });

  test('cross-field checks', () => {
    assert.throws(() => validateComponent('sensor', { state_topic: 's', device_class: 'power', unit_of_measurement: 'kWh' }), /not valid together/);
    assert.throws(() => validateComponent('number', { command_topic: 'c', min: 10, max: 5 }), /'max' must be > 'min'/);
    assert.throws(() => validateComponent('light', { command_topic: 'c', schema: 'fancy' }), /must be one of/);
    assert.throws(() => validateComponent('light', { command_topic: 'c', schema: 'template' }), /required key not provided/);
    assert.throws(
      () => validateComponent('valve', { command_topic: 'c', reports_position: true, payload_open: 'O' }),
      /not allowed if the valve reports a position/,
    );
    assert.throws(() => validateComponent('switch', { command_topic: 'c', availability_topic: 'a', availability: [{ topic: 'b' }] }), /exclusion/);
  });

  test('migrate_discovery must be the only key, and true', () => {
    assert.equal(migrateFlag({ migrate_discovery: true }), 'migrate');
    assert.equal(migrateFlag({ migr_discvry: true }), 'migrate');
    assert.equal(migrateFlag({ migrate_discovery: 'invalid' }), 'invalid');
    assert.equal(migrateFlag({ migrate_discovery: true, name: 'x' }), 'invalid');
    assert.equal(migrateFlag({ name: 'x' }), 'none');
  });
});

describe('ids and names', () => {
  test('device ids and entity keys follow the device-file rules and are stable', () => {
    for (const raw of ['zigbee2mqtt_0x00158d0001a2b3c4', 'aa:bb:cc:dd:ee:ff', 'Ärger Straße #1', '__', 'x'.repeat(200), '🙂']) {
      const id = slugDeviceId(raw);
      assert.match(id, /^[a-z0-9][a-z0-9_-]{0,63}$/, raw);
      assert.equal(slugDeviceId(raw), id, 'deterministic');
    }
    assert.equal(slugDeviceId('aa:bb:cc:dd:ee:ff'), 'aa_bb_cc_dd_ee_ff');
    assert.equal(slugKey('system_uptime_(sec)'), 'system_uptime_sec');
    assert.match(slugKey('x-'.repeat(100)), /^[a-z0-9][a-z0-9_]{0,63}$/);
  });

  test('names: device + entity, null takes the device name, device-class names, a device-name prefix is not doubled', () => {
    const spec = (name: string | null | undefined, deviceClass?: string) => ({ name, deviceClass, platformDefault: 'MQTT Sensor' });
    assert.equal(entityName(spec('Beer'), 'bla', 'k'), 'bla Beer');
    assert.equal(entityName(spec(null), 'Garden', 'k'), 'Garden');
    assert.equal(entityName(spec(undefined, 'temperature'), 'Bedroom', 'k'), 'Bedroom Temperature');
    assert.equal(entityName(spec(undefined), undefined, 'k'), 'MQTT Sensor');
    assert.equal(entityName(spec('Ventilator_dimmer'), 'Ventilator', 'k'), 'Ventilator dimmer');
    assert.equal(entityName(spec('Beer\n\u0000now'), undefined, 'k'), 'Beer now');
  });

  test('JSON depth is measured without parsing', () => {
    assert.equal(jsonDepth('{"a": [1, {"b": "[[[[" }]}'), 3);
    assert.equal(jsonDepth('"\\"["'), 0);
  });
});
