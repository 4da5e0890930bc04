// Held-out sentences on a home the offline model was not built on: test/fixtures/homes/zigbee2mqtt-second-home.json
// (twenty-one zigbee-herdsman-converters models not in the first fixture home, named `den_reading_light`,
// `Lounge Lamp`, `Master Bedroom - Ceiling`, `upstairs/kids_room/nightlight`, `Kitchen/Ceiling` beside
// `Kids room/Ceiling`, an untouched IEEE address; areas Lounge, Den, Utility, Master bedroom, Kids room, Garden),
// published by the simulated Zigbee2MQTT on mosquitto and arranged as docs/your-home.md says (areas for the devices
// without one, a floor, the owner's rule). Each sentence is said in a fresh chat to the offline model, and judged by
// what reached the devices (the /set payloads the simulated Zigbee2MQTT received) and what was said:
//   right      exactly the expected devices got the expected payloads, or the answer says what was asked;
//   asked      it asked which device was meant and did nothing (right where the sentence is ambiguous);
//   wrong      a device that was not meant got a command, or one that was got the wrong one, or a wrong answer;
//   missed     nothing was done (or less than asked) and nothing wrong was said.
// Wrong must be 0. A sentence in MISSES must still miss, with the reason written beside it: when it starts to
// work the test fails until it is moved out of MISSES, so the list stays honest.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { createEngine } from '../../src/agent/factory.js';
import { SessionManager } from '../../src/agent/sessions.js';
import type { Hearth } from '../../src/hearth.js';
import { discoveryHome, type FixtureHome, publishDiscoveryHome, statePayload, useFixtureHome, zigbee2mqttSource } from '../helpers/fixture-home.js';
import { OWNER } from '../helpers/home.js';
import { late } from '../helpers/late.js';
import { started } from '../helpers/use-home.js';
import { HOMES, type SimulatedZigbee2mqtt, type Z2mHomeFixture } from '../helpers/simulated-zigbee2mqtt.js';
import { drain, of } from '../helpers/turns.js';
import { waitFor } from '../helpers/wait.js';

const HOME = JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-second-home.json'), 'utf8')) as Z2mHomeFixture;

/** A payload value: exactly this, or a number within [min, max]. */
type Want = string | number | boolean | [number, number];

interface Sentence {
  say: string;
  /** Friendly name -> the keys its /set payload must have (and no other device gets one). */
  sets?: Record<string, Record<string, Want>>;
  /** A question: nothing is commanded and the answer matches. */
  answer?: RegExp;
  /** Ambiguous: it asks which, and does nothing. */
  asks?: true;
  /** Nothing here fits (no such device, or one that cannot do it): it says so, and does nothing. */
  refused?: true;
  /** A rule has a person approve it (a siren): nothing is sent, and the answer says it waits for approval. */
  held?: true;
}

const ON = { state: 'ON' };
const OFF = { state: 'OFF' };
const LOUNGE_LIGHTS = { 'Lounge/Floor lamp': OFF, 'Lounge Lamp': OFF };

// Written for this home by someone who had not read the sentence data or the corpus; the questions come first
// (they read the fixture's states), then what changes things.
const SENTENCES: Sentence[] = [
  { say: 'is the garden gate shut', answer: /\b(yes|closed|shut)\b/i },
  { say: 'is the gate open?', answer: /\b(no|closed|shut)\b/i },
  { say: "what's it like in the kids room", answer: /20\.5/ },
  { say: 'how warm is it upstairs', answer: /20\.5|18\.5/ },
  { say: "what's the temperature in the garden", answer: /8\.4/ },
  { say: 'how cold is it outside', answer: /8\.4/ },
  { say: 'how humid is it in the den', answer: /44/ },
  { say: "what's the humidity outside", answer: /81/ },
  { say: "what's the air quality like in the den", answer: /good|excellent/i },
  { say: 'any leaks?', answer: /\b(no|dry)\b/i },
  { say: 'is there water on the utility room floor', answer: /\b(no|dry)\b/i },
  { say: 'is the washing machine still running', answer: /\b(yes|running|on|2100)\b/i },
  { say: 'how much power is the washing machine using', answer: /2100/ },
  { say: 'how much energy has the washing machine used', answer: /310/ },
  { say: 'is the washer vibrating', answer: /\bno\b|not/i },
  // Added with the fix for the one above: the washing machine itself cannot vibrate; the sensor named after it can.
  { say: 'is the washing machine vibrating', answer: /^No, the washer vibration .*\bstill\b/i },
  { say: 'is anyone in the garden', answer: /\bno\b|nobody|no one|clear/i },
  { say: 'any motion in the garden?', answer: /\bno\b|clear/i },
  { say: 'are the curtains closed', answer: /\b(yes|closed)\b/i },
  { say: 'how far open is the blind', answer: /\b0 ?%|closed/i },
  { say: "what's the temperature in the master bedroom", answer: /18\.5/ },
  { say: 'what is the radiator in the kids room set to', answer: /21/ },
  { say: 'is the window open in the kids room', answer: /\bno\b|closed|not/i },
  { say: "what's on in the lounge?", answer: /floor lamp/i },
  { say: 'which lights are on', answer: /floor lamp/i },
  { say: 'what is the pm2.5 in the den', answer: /\b8\b/ },
  { say: "what's the air quality in the den", answer: /good|excellent/i },
  { say: 'is the air purifier on', answer: /\b(yes|on)\b/i },

  { say: 'kill the lights in the lounge', sets: LOUNGE_LIGHTS },
  { say: 'turn the lounge lights on', sets: { 'Lounge/Floor lamp': ON, 'Lounge Lamp': ON } },
  { say: 'lounge lamp off please', sets: { 'Lounge Lamp': OFF } },
  { say: 'switch off the floor lamp', sets: { 'Lounge/Floor lamp': OFF } },
  { say: 'turn on the lamp', asks: true },
  { say: 'dim the den to half', sets: { den_reading_light: { brightness: [120, 134] } } },
  { say: 'make the den reading light brighter', sets: { den_reading_light: { brightness: [135, 254] } } },
  { say: 'turn off the den light', sets: { den_reading_light: OFF } },
  { say: 'turn the den light to 100%', sets: { den_reading_light: { brightness: 254 } } },
  { say: 'set the master bedroom to 19', sets: { 'Master bedroom/Radiator': { occupied_heating_setpoint: 19 } } },
  // A number no thermostat there takes, for a place with a blind and a light too: still which.
  { say: 'set the master bedroom to 60', asks: true },
  { say: 'set the heating in the kids room to 22 degrees', sets: { 'Kids room/Radiator': { current_heating_setpoint: 22 } } },
  { say: 'make it warmer in the master bedroom', sets: { 'Master bedroom/Radiator': { occupied_heating_setpoint: [19.5, 22] } } },
  { say: 'turn the kids room radiator down a bit', sets: { 'Kids room/Radiator': { current_heating_setpoint: [17, 21.5] } } },
  { say: 'turn the heating off in the kids room', sets: { 'Kids room/Radiator': { system_mode: 'off' } } },
  { say: 'open the curtains a bit', sets: { 'Lounge/Curtains': { position: [5, 50] } } },
  { say: 'shut the curtains in the lounge', sets: { 'Lounge/Curtains': { state: 'CLOSE' } } },
  { say: 'open the blind in the master bedroom', sets: { 'Master bedroom/Blind': { state: 'OPEN' } } },
  { say: 'lower the bedroom blind halfway', sets: { 'Master bedroom/Blind': { position: 50 } } },
  { say: 'switch off everything in the utility room', sets: { 'Utility/Washing machine': OFF } },
  { say: 'turn the washing machine back on', sets: { 'Utility/Washing machine': ON } },
  // Tuya's siren exposes a settable `alarm`: it is a siren, and sounding or silencing one waits for a person.
  { say: 'sound the siren', held: true },
  { say: 'stop the siren', held: true },
  { say: 'turn on the air purifier', sets: { 'Den/Air purifier': { fan_state: 'ON' } } },
  { say: 'set the air purifier to auto', sets: { 'Den/Air purifier': { fan_mode: 'auto' } } },
  { say: 'turn off the purifier in the den', sets: { 'Den/Air purifier': { fan_state: 'OFF' } } },
  { say: 'turn on the ceiling', asks: true },
  { say: 'turn on the kitchen ceiling', sets: { 'Kitchen/Ceiling': ON } },
  { say: 'turn off the ceiling light in the kids room', sets: { 'Kids room/Ceiling': OFF } },
  { say: 'kids room lights off', sets: { 'Kids room/Ceiling': OFF, 'upstairs/kids_room/nightlight': OFF } },
  { say: 'switch on the nightlight', sets: { 'upstairs/kids_room/nightlight': ON } },
  { say: 'turn on the under cabinet lights', sets: { 'Kitchen/Under cabinet lights': ON } },
  { say: 'kitchen lights to 30%', sets: { 'Kitchen/Ceiling': { brightness: [70, 82] }, 'Kitchen/Under cabinet lights': { brightness: [70, 82] } } },
  { say: 'lights on in the master bedroom', sets: { 'Master Bedroom - Ceiling': ON } },
  { say: 'make the master bedroom ceiling warm white', sets: { 'Master Bedroom - Ceiling': { color_temp: [333, 454] } } },
  { say: 'master bedroom ceiling off', sets: { 'Master Bedroom - Ceiling': OFF } },
  { say: 'set the lounge lamp to blue', sets: { 'Lounge Lamp': { color: 'blue' } } },
  { say: 'turn the floor lamp down to 20 percent', sets: { 'Lounge/Floor lamp': { brightness: [48, 54] } } },
  { say: 'switch off the living room lights', refused: true },
  {
    say: 'turn off the lights upstairs',
    sets: { 'Master Bedroom - Ceiling': OFF, 'Kids room/Ceiling': OFF, 'upstairs/kids_room/nightlight': OFF },
  },
  {
    say: 'turn off all the lights',
    sets: {
      'Lounge/Floor lamp': OFF,
      'Lounge Lamp': OFF,
      den_reading_light: OFF,
      'Master Bedroom - Ceiling': OFF,
      'Kitchen/Ceiling': OFF,
      'Kitchen/Under cabinet lights': OFF,
      'Kids room/Ceiling': OFF,
      'upstairs/kids_room/nightlight': OFF,
    },
  },
  // A second round, written after the first round's fixes and said once before any fix for it.
  { say: 'put the lounge lights at 40 percent', sets: { 'Lounge/Floor lamp': { brightness: [96, 108] }, 'Lounge Lamp': { brightness: [96, 108] } } },
  { say: 'dim the kitchen ceiling', sets: { 'Kitchen/Ceiling': { brightness: [1, 253] } } },
  { say: 'is the nightlight on', answer: /\b(yes|no|on|off)\b/i },
  { say: "what's the power draw of the washing machine", answer: /2100/ },
  { say: 'close the blind in the bedroom', sets: { 'Master bedroom/Blind': { state: 'CLOSE' } } },
  { say: 'open the lounge curtains fully', sets: { 'Lounge/Curtains': { position: 100 } } },
  { say: 'set the kids room to 20 degrees', sets: { 'Kids room/Radiator': { current_heating_setpoint: 20 } } },
  { say: 'is the heating on in the master bedroom', answer: /\b(yes|heat|heating|on)\b/i },
  { say: "what's the target temperature in the kids room", answer: /°C|degrees/ },
  { say: 'make the den light warmer', sets: { den_reading_light: { color_temp: [301, 500] } } },
  { say: 'turn off the siren in the garden', held: true },
  { say: "what's the humidity in the kids room", refused: true },
  { say: 'lock the front door', refused: true },
  // A place alone means its lights, as Home Assistant's own sentences have it ("turn off the kitchen" is
  // HassTurnOff with domain light); "everything in the den" is what reaches the purifier too.
  { say: 'switch off the den', sets: { den_reading_light: OFF } },
  // Everything off in a place with a siren: a siren is only ever sounded or silenced when said, and waits for a person.
  { say: 'switch off everything in the garden', refused: true },
  { say: 'turn off the garden', refused: true },
  { say: 'turn the upstairs lights on', sets: { 'Master Bedroom - Ceiling': ON, 'Kids room/Ceiling': ON, 'upstairs/kids_room/nightlight': ON } },
  { say: 'how hot is the washing machine', refused: true },
  { say: 'turn on the reading light', sets: { den_reading_light: ON } },
  { say: 'cabinet lights off', sets: { 'Kitchen/Under cabinet lights': OFF } },
  { say: 'is there anyone in the garden right now', answer: /\bno\b|nobody|no one|clear/i },
  { say: 'set the floor lamp to warm white', sets: { 'Lounge/Floor lamp': { color_temp: [333, 454] } } },
  { say: 'set the den reading light to 2700 kelvin', sets: { den_reading_light: { color_temp: [360, 380] } } },
  { say: "what's the temperature upstairs", answer: /20\.5|18\.5/ },
  { say: 'turn off the washer', sets: { 'Utility/Washing machine': OFF } },
  { say: 'open the garden gate', refused: true },
  { say: 'stop the curtains', sets: { 'Lounge/Curtains': { state: 'STOP' } } },
  { say: 'toggle the lounge lamp', sets: { 'Lounge Lamp': {} } },
  // A fourth round (relative changes, questions about areas and floors), written on both homes as they are after the
  // rounds above and said once before any fix for it: 8 right, 0 asked, 0 wrong, 4 missed of 12 then; 12 right after
  // the fixes.
  // The kids room's heating was turned off above: it says so, and that a mode turns it on.
  { say: 'a bit warmer in the kids room', refused: true },
  { say: 'is anything on upstairs', answer: /ceiling|nightlight/i },
  { say: 'are all the doors shut', answer: /\b(yes|closed|shut)\b/i },
  { say: 'turn the den down', sets: { den_reading_light: { brightness: [100, 253] } } },
  { say: 'make the floor lamp a tad brighter', sets: { 'Lounge/Floor lamp': { brightness: [110, 254] } } },
  { say: 'is anyone in the den', refused: true },
  { say: "how's the air in the den", answer: /good|excellent/i },
  { say: 'cut the power to the washing machine', sets: { 'Utility/Washing machine': OFF } },
  { say: 'half open the curtains', sets: { 'Lounge/Curtains': { position: 50 } } },
  { say: 'turn the nightlight off in the kids room', sets: { 'upstairs/kids_room/nightlight': OFF } },
  { say: 'is the heating in the master bedroom on', answer: /\b(yes|heat|heating|on)\b/i },
  { say: 'how damp is it outside', answer: /81/ },
  // Added with the fix for "a bit warmer in the kids room", in a room whose heating is on.
  { say: 'a little warmer in the master bedroom', sets: { 'Master bedroom/Radiator': { occupied_heating_setpoint: [19.5, 22] } } },
];

/** Sentences that still miss, each with why. Never wrong: a wrong action is never listed here. */
const MISSES: Record<string, string> = {
  'is the window open in the kids room': 'the valve\'s "Window open" has no device class from Zigbee2MQTT, so it is no window sensor that can be open',
  'dim the kitchen ceiling': 'the light is off by then (the first round turned every light off): it says so rather than turning it on dimmer',
  'make the den light warmer': 'the light is off by then: its white is taken as unknown rather than the last one it reported',
};

type Verdict = 'right' | 'asked' | 'wrong' | 'missed';

function matches(payload: Record<string, unknown>, want: Record<string, Want>): boolean {
  return Object.entries(want).every(([k, w]) => {
    const got = payload[k];
    if (Array.isArray(w)) return typeof got === 'number' && got >= w[0] && got <= w[1];
    // A colour is checked by name only: the payload carries what the light takes ({"color": {"x", "y"}} or a hex).
    if (k === 'color') return got !== undefined;
    return got === w;
  });
}

function judge(s: Sentence, sets: Sent, said: string): { verdict: Verdict; why: string } {
  const asked = /\bwhich\b|do you mean/i.test(said);
  const wanted = s.sets ?? {};
  const stray = sets.filter((x) => !wanted[x.name] || !matches(x.payload, wanted[x.name]!));
  if (stray.length) return { verdict: 'wrong', why: `sent ${stray.map((x) => `${x.name} ${JSON.stringify(x.payload)}`).join('; ')}` };
  if (s.asks) return asked && !sets.length ? { verdict: 'asked', why: said } : { verdict: 'missed', why: said };
  if (s.held) return /approv|confirm/i.test(said) ? { verdict: 'right', why: said } : { verdict: 'missed', why: said };
  const notUnderstood = /^sorry\b|did not understand|could not find|don't know|no .* called/i.test(said) || !said.trim();
  if (s.refused)
    return notUnderstood || /\b(can't|cannot)\b/i.test(said) ? { verdict: 'right', why: said } : { verdict: 'wrong', why: `said ${JSON.stringify(said)}` };
  if (s.answer) {
    // Not understood is a miss, whatever words the answer was to have; an answer about something else, or with
    // the wrong value, is wrong.
    if (notUnderstood) return { verdict: 'missed', why: said };
    return s.answer.test(said) ? { verdict: 'right', why: said } : { verdict: 'wrong', why: `said ${JSON.stringify(said)}` };
  }
  const reached = new Set(sets.map((x) => x.name));
  const missing = Object.keys(wanted).filter((n) => !reached.has(n));
  if (!missing.length) return { verdict: 'right', why: said };
  if (asked && !sets.length) return { verdict: 'asked', why: said };
  return { verdict: 'missed', why: `${missing.join(', ')} not reached: ${said}` };
}

type Sent = Array<{ name: string; payload: Record<string, unknown> }>;

/**
 * Each sentence in a fresh chat with the offline model; `watch()` before a sentence returns what reached the
 * devices after it. Wrong is never allowed; a miss only where MISSES says why.
 */
async function sayAll(
  t: { diagnostic(text: string): void },
  sessions: SessionManager,
  sentences: Sentence[],
  misses: Record<string, string>,
  watch: () => () => Sent,
): Promise<void> {
  const verdicts: Array<{ say: string; verdict: Verdict; why: string }> = [];
  for (const s of sentences) {
    const sent = watch();
    const session = await sessions.open({ principal: OWNER, permissions: 'host', ephemeral: true });
    const { events } = await drain(await session.prompt(s.say));
    const said = of(events, 'token')
      .map((e) => e.text)
      .join('');
    verdicts.push({ say: s.say, ...judge(s, sent(), said) });
  }
  const count = (v: Verdict) => verdicts.filter((x) => x.verdict === v).length;
  t.diagnostic(`right ${count('right')}, asked ${count('asked')}, wrong ${count('wrong')}, missed ${count('missed')} of ${verdicts.length}`);
  for (const v of verdicts) if (v.verdict !== 'right') t.diagnostic(`${v.verdict}: "${v.say}": ${v.why}`);
  assert.deepEqual(
    verdicts.filter((v) => v.verdict === 'wrong').map((v) => `${v.say}: ${v.why}`),
    [],
  );
  const expected = (s: Sentence): Verdict => (s.asks ? 'asked' : 'right');
  const unexpected = verdicts.filter((v, i) => (v.verdict === expected(sentences[i]!)) === v.say in misses);
  assert.deepEqual(
    unexpected.map((v) => `${v.say}: ${v.verdict}${v.say in misses ? ' (listed as a miss: move it out of MISSES)' : `: ${v.why}`}`),
    [],
  );
}

/**
 * A fresh chat with the offline model for each sentence, on the fixture home's Hearth: opened once every device's
 * retained state is heard (the questions read it) and the home is arranged as its owner would.
 */
function useOfflineChat(home: FixtureHome<unknown>, arrange: (hearth: Hearth) => void = () => undefined): SessionManager {
  let sessions: SessionManager | undefined;
  before(async () => {
    const { hearth } = home;
    await waitFor('every device reporting', () =>
      hearth.bridge.registry.devices().every((d) => d.entities.some((e) => hearth.bridge.cache.get(e.id)?.updatedAt !== undefined)),
    );
    arrange(hearth);
    const engine = await createEngine(hearth);
    home.cleanup(() => engine.close());
    sessions = new SessionManager(engine, hearth.tools);
  });
  return late(() => started(sessions, 'the chat'));
}

/** What reached a simulated Zigbee2MQTT's devices after `watch()` (every command was answered before the turn ended). */
function zigbee2mqttSets(sim: SimulatedZigbee2mqtt, fixture: Z2mHomeFixture): () => () => Sent {
  const byName = new Map(fixture.devices.map((d) => [`zigbee2mqtt/${d.friendly_name}/set`, d.friendly_name]));
  return () => {
    const from = sim.received.length;
    return () =>
      sim.received
        .slice(from)
        .filter((r) => r.topic.endsWith('/set'))
        .map((r) => ({ name: byName.get(r.topic) ?? r.topic, payload: JSON.parse(r.payload) as Record<string, unknown> }));
  };
}

describe('held-out sentences on a second Zigbee2MQTT home, through the offline model', () => {
  // The default tool shape for a home this size, as `hearth start` has it.
  const home = useFixtureHome({ name: 'second-home', source: zigbee2mqttSource(HOME), devices: HOME.devices.length - 1, flags: { 'tools.shape': 'auto' } });
  let nightlightArea: string | undefined;
  let suggested: Record<string, string | undefined> = {};
  const sessions = useOfflineChat(home, (hearth) => {
    // As the source places them, before anyone stored an area.
    nightlightArea = hearth.bridge.registry.devices().find((d) => d.name === 'nightlight')?.area;
    suggested = Object.fromEntries(hearth.bridge.registry.devices().map((d) => [d.name, d.suggestedArea]));
    // docs/your-home.md, step 2: the devices without an area get one (a suggestion accepted, a new area for the
    // front door button), the untouched address a name; the bedrooms go on a floor.
    hearth.home.setDeviceArea('Master Bedroom - Ceiling', 'Master bedroom');
    hearth.home.setDeviceArea('Lounge Lamp', 'Lounge');
    hearth.home.setDeviceArea('den_reading_light', 'Den');
    // Named first, then placed by its address: the address still finds it.
    hearth.home.renameDevice('0x00158d000a1b2c3d', 'Washer vibration');
    hearth.home.setDeviceArea('0x00158d000a1b2c3d', 'Utility');
    hearth.home.setDeviceArea('Front door button', 'Hallway', { create: true });
    hearth.home.addFloor('Upstairs', { level: 1 });
    hearth.home.updateArea('Master bedroom', { floor: 'Upstairs' });
    hearth.home.updateArea('Kids room', { floor: 'Upstairs' });
    hearth.home.addFloor('Outside');
    hearth.home.updateArea('Garden', { floor: 'Outside' });
  });

  it('places a deeper topic path in the area it shares with `<area>/` names, and says snake_case names with spaces', () => {
    assert.equal(nightlightArea, 'Kids room');
    assert.equal(suggested['Den reading light'], 'Den');
    assert.equal(suggested['Master Bedroom - Ceiling'], 'Master bedroom');
    assert.equal(suggested['Lounge Lamp'], 'Lounge');
    const nightlight = home.hearth.bridge.registry.devices().find((d) => d.name === 'nightlight')!;
    assert.equal(nightlight.floor, 'Upstairs');
    assert.ok(!home.hearth.home.areas().some((a) => a.name === 'kids_room'));
    const ceilings = home.hearth.bridge.registry.exposed().filter((e) => e.kind === 'light' && /^Ceiling/.test(e.name));
    assert.deepEqual(ceilings.map((e) => e.area).sort(), ['Kids room', 'Kitchen']);
  });

  it(`${SENTENCES.length} sentences: no wrong action or answer; every one not listed as a miss is understood`, async (t) => {
    assert.ok(SENTENCES.length >= 60);
    await sayAll(t, sessions, SENTENCES, MISSES, zigbee2mqttSets(home.source, HOME));
  });

  it('answers a grouped call as a person would: the lights by count, a lone switch by its name, and where they are', async () => {
    const answer = async (say: string) => {
      const session = await sessions.open({ principal: OWNER, permissions: 'host', ephemeral: true });
      const { events } = await drain(await session.prompt(say));
      return of(events, 'token')
        .map((e) => e.text)
        .join('');
    };
    // Two lights and a switch upstairs go out as one call over a list of ids; the answer says what they are.
    assert.equal(await answer('turn off the lights upstairs'), 'Turned off 2 lights and the nightlight upstairs.');
    assert.equal(await answer('turn the upstairs lights on'), 'Turned on 2 lights and the nightlight upstairs.');
    assert.equal(await answer('kids room lights off'), 'Turned off the ceiling and the nightlight in the kids room.');
    assert.equal(await answer('turn on the lights in the lounge'), 'Turned on both lights in the lounge.');
  });
});

const HA_HOME = discoveryHome('homeassistant-second-home.json');

/** The devices of the discovery home, by the first level of their command topics. */
const HA_DEVICES: Record<string, string> = {
  'shellyplus2pm-c4d8d5a1b2c3': 'Conservatory blind',
  'shellyplus1pm-a8032ab9f8e7': 'Pond pump',
  dehumidifier: 'Dehumidifier',
  workshop_lights: 'Workshop lights',
};

const HA_SENTENCES: Sentence[] = [
  { say: 'how warm is the conservatory', answer: /23\.6/ },
  { say: "what's the humidity in the conservatory", answer: /58/ },
  { say: 'how much power is the pump using', answer: /35/ },
  { say: 'is the dehumidifier on', answer: /\b(no|off)\b/i },
  { say: "what's the temperature in the garden", refused: true },
  { say: 'reboot the pond pump', refused: true },
  { say: 'close the conservatory blind', sets: { 'Conservatory blind': { payload: 'close' } } },
  { say: 'open the blind halfway', sets: { 'Conservatory blind': { payload: 'pos,50' } } },
  { say: 'turn off the pond pump', sets: { 'Pond pump': { payload: 'off' } } },
  { say: 'switch on everything in the garden', sets: { 'Pond pump': { payload: 'on' } } },
  { say: 'turn on the dehumidifier', sets: { Dehumidifier: { payload: 'ON' } } },
  { say: 'workshop lights off', sets: { 'Workshop lights': { payload: 'OFF' } } },
  { say: 'turn the lights on in the workshop', sets: { 'Workshop lights': { payload: 'ON' } } },
  // A second round, said once before any fix for it.
  { say: 'turn the pond pump back on', sets: { 'Pond pump': { payload: 'on' } } },
  { say: 'is the workshop light on', answer: /\b(yes|no|on|off)\b/i },
  { say: 'raise the conservatory blind', sets: { 'Conservatory blind': { payload: 'open' } } },
  { say: 'how humid is it in the conservatory', answer: /58/ },
  { say: 'turn everything off in the conservatory', sets: { Dehumidifier: { payload: 'OFF' } } },
];

describe('held-out sentences on a Home Assistant discovery home of Shelly and Tasmota shapes', () => {
  const commands: Array<{ topic: string; payload: string }> = [];
  const home = useFixtureHome({
    name: 'second-ha-home',
    source: async (broker) => {
      // The devices: each config and state retained, and each command answered with the state it asks for, as the
      // firmware reports it (Shelly's status/<component>:0 JSON, Tasmota's stat/RESULT).
      const devices = await publishDiscoveryHome(broker.url, HA_HOME);
      const status = new Map(Object.entries(HA_HOME.states));
      devices.client.on('message', (topic, raw) => {
        const payload = raw.toString('utf8');
        commands.push({ topic, payload });
        const [device] = topic.split('/');
        let reply: [string, unknown] | undefined;
        if (topic.endsWith('/command/switch:0')) {
          const at = `${device}/status/switch:0`;
          reply = [at, { ...(status.get(at) as object), output: payload === 'on' }];
        } else if (topic.endsWith('/command/cover:0')) {
          const at = `${device}/status/cover:0`;
          const pos = payload.startsWith('pos,') ? Number(payload.slice(4)) : payload === 'open' ? 100 : payload === 'close' ? 0 : undefined;
          reply = [at, { ...(status.get(at) as object), ...(pos === undefined ? {} : { current_pos: pos, state: pos > 0 ? 'open' : 'closed' }) }];
        } else if (topic.endsWith('/cmnd/POWER')) reply = [`${device}/stat/RESULT`, { POWER: payload }];
        if (reply) {
          status.set(reply[0], reply[1]);
          void devices.client.publishAsync(reply[0], statePayload(reply[1]), { retain: true, qos: 1 });
        }
      });
      await devices.client.subscribeAsync(['+/command/#', '+/cmnd/#'], { qos: 1 });
      return devices;
    },
    devices: 5,
    flags: { 'tools.shape': 'auto' },
  });
  // docs/your-home.md, "A Home Assistant discovery home": the Tasmotas say no area; their owner gives one.
  const sessions = useOfflineChat(home, (hearth) => {
    hearth.home.setDeviceArea('Workshop lights', 'Workshop', { create: true });
    hearth.home.setDeviceArea('Dehumidifier', 'Conservatory');
  });

  it("puts Shelly's devices in their suggested_area, hides entity_category settings and diagnostics, and reads Tasmota's abbreviations", () => {
    const byName = (name: string) => home.hearth.bridge.registry.devices().find((d) => d.name === name);
    assert.equal(byName('Conservatory blind')?.area, 'Conservatory');
    assert.equal(byName('Pond pump')?.area, 'Garden');
    assert.equal(byName('Conservatory blind')?.areaFrom, 'source');
    assert.equal(byName('Dehumidifier')?.areaFrom, 'person');
    const hidden = home.hearth.bridge.registry.entities().filter((e) => e.exposed === false);
    assert.deepEqual(hidden.map((e) => `${e.category} ${e.kind}`).sort(), ['config button', 'diagnostic sensor', 'diagnostic sensor', 'diagnostic sensor']);
    assert.ok(!home.hearth.tools.all().some((t) => t.meta.entityIds.some((id) => hidden.some((e) => e.id === id))));
  });

  it(`${HA_SENTENCES.length} sentences: no wrong action or answer, no miss`, async (t) => {
    await sayAll(t, sessions, HA_SENTENCES, {}, () => {
      const from = commands.length;
      return () => commands.slice(from).map((c) => ({ name: HA_DEVICES[c.topic.split('/')[0]!] ?? c.topic, payload: { payload: c.payload } }));
    });
  });
});

const THIRD = JSON.parse(readFileSync(join(HOMES, 'zigbee2mqtt-third-home.json'), 'utf8')) as Z2mHomeFixture;

// A third round on a third home, built and written after the second round's fixes, said once before any fix.
const THIRD_SENTENCES: Sentence[] = [
  { say: 'turn on the hue lamp', sets: { 'Living Room/Hue Color Lamp': ON } },
  { say: 'make the living room lamp red', sets: { 'Living Room/Hue Color Lamp': { color: 'red' } } },
  { say: 'hallway light on', sets: { 'Hallway/Pendant': ON } },
  { say: 'turn on the desk fan', sets: { 'office/desk_fan': ON } },
  { say: 'is the kettle on', answer: /\b(yes|no|on|off)\b/i },
  { say: 'switch the kettle on', sets: { 'Kitchen/Kettle': ON } },
  { say: 'how much power is the kettle drawing', answer: /1850/ },
  { say: 'is there motion in the hallway', answer: /\bno\b|clear|not/i },
  { say: "what's the temperature in the office", answer: /22\.7/ },
  { say: 'how humid is the bathroom', answer: /72/ },
  { say: 'is the back door open', answer: /\bno\b|closed|shut/i },
  { say: 'close the roller shade', sets: { 'Office/Roller shade': { state: 'CLOSE' } } },
  { say: 'open the bedroom curtains halfway', sets: { 'Bedroom/Curtain motor': { position: 50 } } },
  { say: 'any leaks in the kitchen', answer: /\bno\b|dry/i },
  { say: 'turn off the electric blanket', sets: { 'Bedroom/Electric blanket': OFF } },
  { say: 'turn the blanket on', sets: { 'Bedroom/Electric blanket': ON } },
  { say: 'turn off everything in the bedroom', sets: { 'Bedroom/Electric blanket': OFF } },
  { say: "what's the air pressure in the bathroom", answer: /100\.9 kPa/ },
  { say: 'switch off the fan', sets: { 'office/desk_fan': OFF } },
  { say: 'lights off in the living room', sets: { 'Living Room/Hue Color Lamp': OFF } },
  { say: 'set the living room lamp to 50%', sets: { 'Living Room/Hue Color Lamp': { brightness: [120, 134] } } },
  { say: 'is anything on in the kitchen', answer: /kettle/i },
  { say: 'turn off the kettle', sets: { 'Kitchen/Kettle': OFF } },
  { say: 'any movement in the garage', answer: /\bno\b|clear|not/i },
  { say: 'dim the pendant', sets: { 'Hallway/Pendant': { brightness: [1, 199] } } },
  { say: "what's the temperature in the bathroom", answer: /23\.1/ },
  // The fourth round, said once before any fix for it: 10 right, 0 asked, 0 wrong, 0 missed of 10 then.
  { say: 'is anything on in the living room', answer: /lamp/i },
  { say: 'make the living room lamp a tad brighter', sets: { 'Living Room/Hue Color Lamp': { brightness: [135, 254] } } },
  { say: 'turn the pendant up', sets: { 'Hallway/Pendant': { brightness: [120, 254] } } },
  { say: 'is the shade down', answer: /\b(yes|closed|down)\b/i },
  { say: 'raise the roller shade a little', sets: { 'Office/Roller shade': { position: [5, 50] } } },
  { say: 'is the desk fan running', answer: /\b(no|off)\b/i },
  { say: 'how damp is the bathroom', answer: /72/ },
  { say: 'has anyone been in the hallway recently', answer: /\bno\b|nobody|no one|not/i },
  { say: 'dim the living room lamp to 20 percent', sets: { 'Living Room/Hue Color Lamp': { brightness: [48, 54] } } },
  { say: 'is it warm in the bathroom', answer: /23\.1/ },
  // Issue 42's leftover, added with its fix: "recently" reads both motion sensors' history of the last hour, and
  // the answer says the window.
  { say: 'has anyone moved recently', answer: /^No, none of the 2 motion sensors saw motion between .+ UTC and .+ UTC\.$/ },
  { say: 'was there any movement in the garage today', answer: /^No, the .+ saw no motion between .+ UTC and .+ UTC\.$/ },
];

const THIRD_MISSES: Record<string, string> = {};

describe('held-out sentences on a third Zigbee2MQTT home, through the offline model', () => {
  const home = useFixtureHome({ name: 'third-home', source: zigbee2mqttSource(THIRD), devices: THIRD.devices.length - 1, flags: { 'tools.shape': 'auto' } });
  const sessions = useOfflineChat(home);

  it(`${THIRD_SENTENCES.length} sentences: no wrong action or answer; every one not listed as a miss is understood`, async (t) => {
    await sayAll(t, sessions, THIRD_SENTENCES, THIRD_MISSES, zigbee2mqttSets(home.source, THIRD));
  });
});
