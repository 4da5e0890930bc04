// Homie parsing and mapping case by case, without a broker.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { encodeCommand } from '../../src/devices/commands.js';
import { HomieAdapter } from '../../src/devices/discovery/homie/adapter.js';
import { homieToDevice, stateWord } from '../../src/devices/discovery/homie/device.js';
import { Message } from '../../src/devices/decode.js';
import { parseEnum, parseRange } from '../../src/devices/discovery/homie/format.js';
import { HomieV4Tree } from '../../src/devices/discovery/homie/v4.js';
import { parseDescription } from '../../src/devices/discovery/homie/v5.js';
import { DeviceRegistry } from '../../src/devices/registry.js';
import type { MqttConnection } from '../../src/mqtt/connection.js';
import { logSink } from '../helpers/log-sink.js';

describe('Homie formats', () => {
  it('reads numeric ranges (v5 adds a step and open bounds)', () => {
    assert.deepEqual(parseRange('0:100', true), { min: 0, max: 100, step: 1 });
    assert.deepEqual(parseRange('10:30:0.5', false), { min: 10, max: 30, step: 0.5 });
    assert.deepEqual(parseRange('-20.5:40', false), { min: -20.5, max: 40 });
    for (const bad of [':100', '0:', '5:5', 'a:b', '0:10:-1', '', undefined, '1:2:3:4']) assert.equal(parseRange(bad, false), undefined, String(bad));
    assert.deepEqual(parseEnum(' a, b ,,a,c'), ['a', 'b', 'c']);
  });

  it('$state words: ready (and alert) are available, every other word is not', () => {
    const word = (w: string) => stateWord(new Message('homie/d/$state', Buffer.from(w)));
    assert.deepEqual(['ready', 'alert', 'lost', 'disconnected', 'init', 'sleeping', ' ready\n', ''].map(word), [
      'ready',
      'ready',
      'lost',
      'lost',
      'lost',
      'lost',
      'ready',
      '',
    ]);
  });
});

describe('Homie 4 attribute tree', () => {
  it('gathers attributes in any order, skips node arrays and forgets cleared devices', () => {
    const tree = new HomieV4Tree();
    const put = (topic: string, payload: string) => tree.apply(topic.split('/'), payload);
    put('dev/node/p/$datatype', 'integer');
    put('dev/node/$properties', 'p,q');
    put('dev/$nodes', 'node,arr[]');
    assert.equal(tree.describe('dev').skipped[0].reason, 'incomplete');
    put('dev/$homie', '4.0.0');
    put('dev/$state', 'ready');
    put('dev/node/p/$settable', 'true');
    put('dev/node/p/$format', '1:9');
    put('5/x/$state', 'ready');
    assert.equal(put('dev/node/p', '3'), undefined, 'values are not attributes');
    const { description, skipped } = tree.describe('dev');
    // q has said nothing yet: Homie 4 requires its $datatype, which decides how its values read.
    assert.deepEqual(
      skipped.map((s) => [s.what, s.reason]),
      [
        ['dev/node/q', 'incomplete'],
        ['dev/arr[]', 'node_array'],
      ],
    );
    const properties = () => tree.describe('dev').description!.nodes[0].properties.map((p) => [p.id, p.datatype, p.settable, p.format]);
    assert.deepEqual(
      description!.nodes[0].properties.map((p) => [p.id, p.datatype, p.settable, p.format]),
      [['p', 'integer', true, '1:9']],
    );
    put('dev/node/q/$datatype', 'boolean');
    assert.deepEqual(properties(), [
      ['p', 'integer', true, '1:9'],
      ['q', 'boolean', false, undefined],
    ]);
    // Homie 3 gives $datatype a default (string): a property without one is read as text.
    put('dev/node/$properties', 'p,q,r');
    put('dev/$homie', '3.0.1');
    assert.deepEqual(properties(), [
      ['p', 'integer', true, '1:9'],
      ['q', 'boolean', false, undefined],
      ['r', undefined, false, undefined],
    ]);
    assert.deepEqual(tree.ids(), ['dev'], 'Homie 5 namespace is not a v4 device');
    put('dev/$homie', '');
    assert.ok(tree.has('dev'));
    put('dev/$state', '');
    assert.ok(!tree.has('dev'));
  });

  it('refuses other convention versions', () => {
    const tree = new HomieV4Tree();
    tree.apply(['d', '$homie'], '2.0.1');
    tree.apply(['d', '$nodes'], '');
    assert.equal(tree.describe('d').skipped[0].reason, 'unsupported_version');
  });
});

describe('Homie 5 description', () => {
  it('reads nodes and properties as objects or as arrays with ids', () => {
    const asObject = parseDescription(
      'd',
      JSON.stringify({ homie: '5.0', name: 'D', nodes: { n: { properties: { p: { datatype: 'boolean', settable: true } } } } }),
    );
    const asArray = parseDescription(
      'd',
      JSON.stringify({ homie: '5.0', name: 'D', nodes: [{ id: 'n', properties: [{ id: 'p', datatype: 'boolean', settable: true }] }] }),
    );
    assert.deepEqual(asObject.description, asArray.description);
    assert.equal(asObject.description!.nodes[0].properties[0].settable, true);
    assert.equal(parseDescription('d', '{').skipped[0].reason, 'malformed');
    assert.equal(parseDescription('d', JSON.stringify({ homie: '4.0' })).skipped[0].reason, 'unsupported_version');
    assert.equal(parseDescription('d', JSON.stringify({ homie: '5.0', nodes: { 'Bad Id': {} } })).skipped[0].reason, 'bad_id');
  });

  it('maps datatypes to kinds and says why the rest has no tool', () => {
    const props = [
      { id: 'sw', datatype: 'boolean', settable: true, retained: true },
      { id: 'bell', datatype: 'boolean', settable: false, retained: false },
      { id: 'go', datatype: 'enum', format: 'go', settable: true, retained: false },
      { id: 'level', datatype: 'integer', format: '0:10', settable: true, retained: true },
      { id: 'free', datatype: 'float', settable: true, retained: true },
      { id: 'text', datatype: 'string', settable: true, retained: true },
      { id: 'when', datatype: 'datetime', settable: false, retained: true },
      { id: 'odd', datatype: 'blob', settable: false, retained: true },
      { id: 'none', datatype: 'enum', format: '', settable: true, retained: true },
    ];
    const c = homieToDevice({ version: 5, id: 'dev', name: 'Dev', nodes: [{ id: 'n', properties: props }] }, { base: 'homie/5' });
    const kinds = Object.fromEntries(c.device!.entities.map((e) => [e.key, e.kind]));
    assert.deepEqual(kinds, {
      n_sw: 'switch',
      n_bell: 'binary_sensor',
      n_go: 'button',
      n_level: 'number',
      n_free: 'sensor',
      n_text: 'sensor',
      n_when: 'sensor',
      n_none: 'sensor',
    });
    assert.deepEqual(Object.fromEntries(c.skipped.map((s) => [s.what, s.reason])), {
      'n/free': 'no_range',
      'n/text': 'text_command',
      'n/odd': 'unknown_datatype',
      'n/none': 'empty_enum',
    });
    const sw = c.device!.entities[0];
    assert.deepEqual(encodeCommand(sw, { action: 'turn_on' }), [{ topic: 'homie/5/dev/n/sw/set', payload: 'true' }]);
    assert.deepEqual(sw.attributes, { target: { topic: 'homie/5/dev/n/sw/$target' } });
    const go = c.device!.entities.find((e) => e.key === 'n_go')!;
    assert.deepEqual(encodeCommand(go, { action: 'press' }), [{ topic: 'homie/5/dev/n/go/set', payload: 'go' }]);
  });

  it('names properties after the device, adding the node when two share a name', () => {
    const c = homieToDevice(
      {
        version: 4,
        id: 'house',
        name: 'House',
        nodes: [
          { id: 'kitchen', name: 'Kitchen', properties: [{ id: 'temp', name: 'Temperature', datatype: 'float', settable: false, retained: true }] },
          {
            id: 'hall',
            name: 'Hall',
            properties: [
              { id: 'temp', name: 'Temperature', datatype: 'float', settable: false, retained: true },
              { id: 'door', name: 'Door', datatype: 'boolean', settable: false, retained: true },
            ],
          },
        ],
      },
      { base: 'homie' },
    );
    assert.deepEqual(
      c.device!.entities.map((e) => e.name),
      ['House Kitchen Temperature', 'House Hall Temperature', 'House Door'],
    );
    assert.equal(c.device!.entities[0].attributes.target, undefined, 'no $target before Homie 5');
  });
});

describe('Homie adapter', () => {
  it('subscribes to the attribute topics and rebuilds once a burst settles', () => {
    const connection = Object.assign(new EventEmitter(), {
      subscribed: [] as string[],
      subscribe(t: string[]) {
        this.subscribed.push(...t);
      },
      unsubscribe() {},
    });
    const registry = new DeviceRegistry();
    const logs = logSink('debug');
    const adapter = new HomieAdapter({ prefix: 'homie', settleMs: 10_000 });
    adapter.start({ connection: connection as unknown as MqttConnection, registry, log: logs.log, config: {} as never });
    assert.ok(connection.subscribed.includes('homie/+/$state') && connection.subscribed.includes('homie/5/+/$description'));
    const send = (topic: string, payload: string) => connection.emit('message', topic, Buffer.from(payload), true);
    send('homie/d/$homie', '4.0.0');
    send('homie/d/$state', 'ready');
    send('homie/d/$nodes', 'n');
    send('homie/d/n/$properties', 'p');
    send('homie/d/n/p/$datatype', 'boolean');
    assert.equal(registry.devices().length, 0, 'not before the burst settles');
    adapter.flush();
    assert.equal(registry.devices().length, 1);
    assert.equal(registry.entity('d.n_p')!.availability!.sources[0].topic, 'homie/d/$state');
    adapter.stop();
  });
});
