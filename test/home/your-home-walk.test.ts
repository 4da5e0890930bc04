// docs/your-home.md walked on homes it was not written from: test/fixtures/homes/zigbee2mqtt-third-home.json (Title
// Case areas `Living Room/Hue Color Lamp`, a lower-case path `office/desk_fan` beside `Office/Thermometer`, a roller
// shade, a kettle), published by the simulated Zigbee2MQTT on mosquitto, and homeassistant-second-home.json (Shelly
// and Tasmota discovery shapes), its retained configs on mosquitto. Each test is something that tripped a newcomer
// following the page on these homes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runHearth } from '../helpers/cli.js';
import { createEngine } from '../../src/agent/factory.js';
import { SessionManager } from '../../src/agent/sessions.js';
import { discoveryHome, discoverySource, useFixtureHome, zigbee2mqttSource } from '../helpers/fixture-home.js';
import { OWNER } from '../helpers/home.js';
import { HOMES, type Z2mHomeFixture } from '../helpers/simulated-zigbee2mqtt.js';
import { drain, of } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait.js';

const HOME = JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-third-home.json'), 'utf8')) as Z2mHomeFixture;

describe('docs/your-home.md on the third Zigbee2MQTT home', () => {
  const home = useFixtureHome({ name: 'third-home-walk', source: zigbee2mqttSource(HOME), devices: HOME.devices.length - 1 });
  const device = (name: string) => {
    const d = home.hearth.bridge.registry.devices().find((x) => x.name === name);
    assert.ok(d, `${name} is a device: ${home.hearth.bridge.registry.devices().map((x) => x.name)}`);
    return d;
  };

  it("a roller shade's Reverse direction is a setting: not shown to agents, no tool beside the shade's own", () => {
    const shade = device('Roller shade');
    const reverse = shade.entities.find((e) => e.key === 'reverse_direction');
    assert.ok(reverse, shade.entities.map((e) => e.key).join(', '));
    assert.equal(reverse.category, 'config');
    assert.equal(
      home.hearth.bridge.registry.exposed().some((e) => e.id === reverse.id),
      false,
    );
    assert.deepEqual(
      home.hearth.tools
        .all()
        .map((t) => t.name)
        .filter((n) => n.startsWith('office_roller_shade') && n.includes('reverse')),
      [],
    );
  });

  it('an area written `office/desk_fan` by one device and `Office/Thermometer` by another is the Office, as the owner capitalised it', () => {
    assert.equal(device('Desk fan').area, 'Office');
    assert.equal(device('Thermometer').area, 'Office');
    assert.deepEqual(
      home.hearth.home
        .areas()
        .map((a) => a.name)
        .filter((n) => n.toLowerCase() === 'office'),
      ['Office'],
    );
  });

  it("an area's and a floor's aliases, given while the chat runs, are said as their names are (docs/your-home.md, steps 2 and 5)", async () => {
    const { hearth } = home;
    const engine = await createEngine(hearth);
    home.cleanup(() => engine.close());
    const sessions = new SessionManager(engine, hearth.tools);
    const say = async (text: string) => {
      const session = await sessions.open({ principal: OWNER, permissions: 'host', ephemeral: true });
      const { events } = await drain(await session.prompt(text));
      return of(events, 'token')
        .map((e) => e.text)
        .join('');
    };
    // The page's own examples: `hearth areas alias "Living room" lounge "front room"`, a floor with another name.
    hearth.home.updateArea('Living Room', { aliases: ['lounge', 'front room'] });
    hearth.home.addFloor('Upstairs', { level: 1 });
    hearth.home.updateArea('Office', { floor: 'Upstairs' });
    hearth.home.updateFloor('Upstairs', { aliases: ['top floor'] });
    const lamp = 'Living Room/Hue Color Lamp';
    const before = home.source.sets(lamp).length;
    assert.match(await say('turn on the lights in the lounge'), /hue color lamp/i);
    assert.deepEqual(
      home.source
        .sets(lamp)
        .slice(before)
        .map((p) => JSON.parse(p).state),
      ['ON'],
    );
    assert.match(await say('turn off the front room lights'), /hue color lamp/i);
    assert.equal(home.source.state(lamp)?.state, 'OFF');
    assert.match(await say('how warm is it on the top floor'), /22\.7/);
    // No light on that floor: it says where it looked as a person would, never "in the upstairs".
    assert.match(await say('turn off the lights upstairs'), /^Sorry, I could not find a light upstairs\./);
  });

  it('`hearth call` with arguments that are not JSON prints an example with the tool asked for, not a demo tool this home lacks', async () => {
    const r = await runHearth(['call', 'kitchen_kettle', '{"action": turn_on}', '--mqtt-url', home.broker.url, '--no-demo'], { cwd: home.dir });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /the arguments are not JSON: .*\n {2}example: .*call kitchen_kettle '\{"action":"turn_on"\}'/);
    assert.doesNotMatch(r.stderr, /living_room_lamp/);
  });

  it('a device renamed after what it is (`hearth devices rename "Back door" "Back door contact"`) is said once, not "Back door contact Contact"', async () => {
    const { hearth } = home;
    hearth.home.renameDevice('Back door', 'Back door contact');
    const contact = device('Back door contact').entities.find((e) => e.key === 'contact');
    assert.equal(contact?.name, 'Back door contact');
    assert.ok(hearth.tools.get('back_door_contact'), 'its tool is named after it once');
    assert.equal(device('Back door contact').entities.find((e) => e.key === 'battery')?.name, 'Back door contact Battery');
    // A device whose main entity is called as the device is keeps the entity's own part on the others.
    hearth.home.renameDevice('Kettle', 'Kitchen kettle power');
    assert.equal(device('Kitchen kettle power').entities.find((e) => e.key === 'power')?.name, 'Kitchen kettle power Power');
    hearth.home.renameDevice('Kitchen kettle power', 'Kettle');
  });

  it('a device named after what it reports in Zigbee2MQTT (`Kitchen/Sink water leak`) names that reading once, and its tool with it', async () => {
    const { hearth } = home;
    await home.source.rename('Kitchen/Sink leak', 'Kitchen/Sink water leak');
    await waitFor('the rename', () => hearth.bridge.registry.devices().some((d) => d.name === 'Sink water leak'));
    const leak = device('Sink water leak');
    assert.equal(leak.entities.find((e) => e.key === 'water_leak')?.name, 'Sink water leak');
    assert.equal(leak.entities.find((e) => e.key === 'tamper')?.name, 'Sink water leak Tamper');
    await waitFor('its tool', () => hearth.tools.get('kitchen_sink_water_leak'));
    assert.equal(hearth.tools.get('kitchen_sink_water_leak_water_leak'), undefined);
  });

  it('removing an area only a source names is refused, saying why and what moves its devices, and nothing changes', () => {
    const { hearth } = home;
    const before = hearth.home.areas().find((a) => a.name === 'Bathroom');
    assert.deepEqual([before?.stored, before?.devices], [false, 1]);
    assert.throws(
      () => hearth.home.removeArea('Bathroom'),
      (err: Error & { code?: string }) =>
        err.code === 'conflict' &&
        /^area: "Bathroom" is named only by its devices' source .*cannot be removed; place its devices elsewhere with `hearth devices area <device> <area>`$/.test(
          err.message,
        ),
    );
    assert.deepEqual(
      hearth.home.areas().find((a) => a.name === 'Bathroom'),
      before,
    );
    assert.equal(device('Climate').area, 'Bathroom');
  });

  it('`hearth devices area <device>` without an area prints an example with that device, not a device this home lacks', async () => {
    const r = await runHearth(['devices', 'area', 'Kitchen/Kettle', '--mqtt-url', home.broker.url, '--no-demo'], { cwd: home.dir });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /give an area, or --none, or --reset \(e\.g\. hearth devices area Kitchen\/Kettle <area>; `hearth areas` lists the areas\)/);
    assert.doesNotMatch(r.stderr, /Coffee machine/);
  });
});

describe('docs/your-home.md on the Home Assistant discovery home of Shelly and Tasmota shapes', () => {
  const HA = discoveryHome('homeassistant-second-home.json');
  const home = useFixtureHome({ name: 'ha-second-home-walk', source: discoverySource(HA), devices: 5 });

  it('a Tasmota device, named in one config only and handed over by the broker after its others, gets its id from its name', () => {
    const devices = home.hearth.bridge.registry.devices();
    const dehumidifier = devices.find((d) => d.name === 'Dehumidifier');
    assert.ok(dehumidifier, devices.map((d) => d.name).join(', '));
    assert.equal(dehumidifier.id, 'dehumidifier');
    // Every entity of it is under that id: the one named, and the two that only say `dev: {ids}`.
    assert.deepEqual(
      dehumidifier.entities.map((e) => e.id.split('.')[0]),
      ['dehumidifier', 'dehumidifier', 'dehumidifier'],
    );
    assert.deepEqual(devices.map((d) => d.id).sort(), ['conservatory_blind', 'conservatory_sensor', 'dehumidifier', 'pond_pump', 'workshop_lights']);
  });
});
