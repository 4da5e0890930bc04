// A scene is what people say: "activate movie time". A later device must not take that phrase, nor make it
// ambiguous, by naming its scene the same with a twist (punctuation, case, a leading article) or by an alias
// that spells it (a Zigbee2MQTT group "Movie" with a scene "time" is aliased "Movie time"), or by a name the
// offline model cannot tell from it ("Movie times"). The one ranked first
// (a device file, else the first discovered) keeps the phrase; the later one is renamed and loses the alias.
// Real broker (aedes), real SQLite file, the offline model over the running Hearth's registry and tools.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { IntentProvider } from '../../src/agent/providers/intent/index.js';
import type { Hearth } from '../../src/hearth.js';
import { toolSpecs } from '../../src/tools/generator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const FILE = `devices:
  - id: movie_time
    name: Movie time
    area: Living room
    entities:
      scene: { kind: scene, command_topic: scenes/movie/set }
`;

describe('security: a later scene never takes the phrase of an earlier one', () => {
  let broker: TestBroker;
  let hearth: Hearth;
  let device: MqttClient;
  let dir: string;

  before(async () => {
    broker = await startAedes();
    dir = mkdtempSync(join(tmpdir(), 'hearth-scenes-'));
    mkdirSync(join(dir, 'devices'));
    writeFileSync(join(dir, 'devices', 'scenes.yaml'), FILE);
    hearth = await openHearth(broker.url, dir, logSink('debug').log, { 'devices.paths': [join(dir, 'devices')], 'tools.shape': 'grouped' });
    device = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    const retain = (topic: string, payload: unknown) => device.publishAsync(topic, JSON.stringify(payload), { qos: 1, retain: true });
    // Discovered first: a Home Assistant scene "Cinema"; then the copies.
    await retain('homeassistant/scene/cinema/config', { name: 'Cinema', unique_id: 'cinema', command_topic: 'scenes/cinema/set' });
    await waitFor('Cinema', () => hearth.bridge.registry.entities().some((e) => e.name === 'Cinema'));
    await retain('homeassistant/scene/copy1/config', { name: 'Movie-time!', unique_id: 'copy1', command_topic: 'evil/1' });
    await retain('homeassistant/scene/copy2/config', { name: 'The movie time', unique_id: 'copy2', command_topic: 'evil/2' });
    await retain('homeassistant/scene/copy3/config', { name: 'CINEMA.', unique_id: 'copy3', command_topic: 'evil/3' });
    await retain('homeassistant/scene/copy4/config', { name: 'Movie times', unique_id: 'copy4', command_topic: 'evil/4' });
    await retain('zigbee2mqtt/bridge/state', { state: 'online' });
    await retain('zigbee2mqtt/bridge/devices', []);
    await retain('zigbee2mqtt/bridge/groups', [{ id: 9, friendly_name: 'Movie', members: [], scenes: [{ id: 1, name: 'time' }] }]);
    await waitFor('the copies', () => hearth.bridge.registry.entities().filter((e) => e.kind === 'scene').length === 7).catch((err) => {
      throw new Error(`${err.message}: ${JSON.stringify(hearth.bridge.registry.entities().map((e) => [e.id, e.name]))}`);
    });
  });
  after(async () => {
    await device?.endAsync(true).catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const understand = (text: string) => {
    // As the running Hearth gives them to its offline model: in rank order.
    const entities = hearth.bridge.registry.ranked();
    const tools = hearth.tools.all();
    const model = new IntentProvider({ entities: () => entities, tools: () => tools });
    return model.understand(
      text,
      toolSpecs(tools).map((s) => s.function.name),
    );
  };

  it('"activate movie time" and "activate cinema" are the first-ranked scenes, with nothing to ask', () => {
    const movie = understand('activate movie time');
    assert.deepEqual(movie.calls, [{ tool: 'activate_scenes', args: { entity: 'movie_time.scene' } }], movie.text);
    const cinema = understand('activate cinema');
    assert.equal(cinema.calls.length, 1, cinema.text);
    assert.equal(hearth.bridge.registry.entity(cinema.calls[0].args.entity as string)?.commandTopic, 'scenes/cinema/set');
  });

  it('the later scenes are renamed apart and lose an alias that spells an earlier name', () => {
    const later = hearth.bridge.registry.entities().filter((e) => e.kind === 'scene' && !['movie_time.scene'].includes(e.id) && e.name !== 'Cinema');
    for (const e of later) {
      const said = (t: string) =>
        t
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, ' ')
          .trim()
          .replace(/^the /, '');
      if (e.name !== 'Movie times') assert.notEqual(said(e.name), 'movie time', e.name);
      assert.notEqual(said(e.name), 'cinema', e.name);
      for (const a of e.aliases) assert.notEqual(said(a), 'movie time', `${e.name}: alias ${a}`);
    }
    const group = later.find((e) => e.commandTopic === 'zigbee2mqtt/Movie/set')!;
    assert.equal(group.name, 'time');
    assert.deepEqual(group.aliases, []);
  });
});
