// The offline model's sentences are data: the shipped language compiles
// clean; a user's folder adds sentences and overrides lists; a bad file is
// reported with file, line and reason while everything else keeps working; the
// folder is reloaded when it changes. Also: the question classifier other
// engines use, and one-sentence answers to which / how many / any questions.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isQuestion, IntentProvider, SentenceSet } from '../../src/agent/providers/intent/index.js';
import { parseDeviceFile } from '../../src/devices/loader.js';
import { generateTools } from '../../src/tools/generator.js';
import { stateText } from '../../src/tools/state-text.js';
import { startAedes } from '../helpers/brokers.js';
import { OWNER, startHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { twoRounds, demo, tools, names } from './helpers.js';

const dirs: string[] = [];
const sets: SentenceSet[] = [];
after(() => {
  for (const s of sets) s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-sentences-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function model(sentences: SentenceSet): IntentProvider {
  sets.push(sentences);
  return new IntentProvider({ entities: () => demo, tools: () => tools, sentences });
}

const calls = (p: IntentProvider, text: string, area?: string) => p.understand(text, names, { area }).calls.map((c) => [c.tool, c.args]);

describe('intent sentences: data, not code', () => {
  it('the shipped English compiles without a problem', () => {
    const shipped = SentenceSet.shipped();
    assert.deepEqual(shipped.problems, []);
    assert.ok(shipped.current().templates.length > 150);
  });

  it("docs/sentences.md's example works as written: a phrasing for the whole house and a white of one's own", () => {
    const doc = readFileSync(new URL('../../docs/sentences.md', import.meta.url), 'utf8');
    const example = /```yaml\n(# sentences\/lights-out\.yaml\n[\s\S]*?)```/.exec(doc)?.[1];
    assert.ok(example, 'docs/sentences.md shows sentences/lights-out.yaml');
    const p = model(new SentenceSet({ userDir: folder({ 'lights-out.yaml': example }) }));
    // The demo's lamp is a plug called a lamp: a light to people, so the group is of every kind.
    assert.deepEqual(calls(p, 'lights out'), [['control_group', { action: 'turn_off', kind: 'all' }]]);
    assert.deepEqual(calls(p, 'lights out', 'Kitchen'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_off' }]]);
    assert.deepEqual(calls(p, 'reading light in the kitchen'), [
      ['control_lights', { entity: 'kitchen_light.light', action: 'turn_on', color_temp_kelvin: 4000 }],
    ]);
  });

  it("docs/sentences.md's records example works as written: a history question in words of one's own (#42)", () => {
    const doc = readFileSync(new URL('../../docs/sentences.md', import.meta.url), 'utf8');
    const example = /```yaml\n(# sentences\/records\.yaml\n[\s\S]*?)```/.exec(doc)?.[1];
    assert.ok(example, 'docs/sentences.md shows sentences/records.yaml');
    const p = model(new SentenceSet({ userDir: folder({ 'records.yaml': example }) }));
    assert.deepEqual(calls(p, 'for how long has the lamp been on'), [['get_history', { entity: 'living_room_lamp.lamp', since: '-365d' }]]);
    const [[tool, made]] = calls(p, 'was the garage door open while i was at work');
    const args = made as Record<string, unknown>;
    assert.equal(tool, 'get_history');
    assert.equal(args.entity, 'garage_door.door');
    assert.equal(new Date(String(args.since)).getHours(), 8);
  });

  it("a user's folder adds sentences, overrides lists and may require the speaker's area", () => {
    const dir = folder({
      'mine.yaml': `language: en
intents:
  HassTurnOn:
    data:
      - sentences:
          - "illuminate <target>"
      - sentences:
          - "lights up"
        slots:
          kind: light
        requires_context:
          area:
            slot: true
lists:
  level:
    values:
      - in: "(blast|max)"
        out: 100
`,
    });
    const p = model(new SentenceSet({ userDir: dir }));
    assert.deepEqual(p.sentences.problems, []);
    assert.deepEqual(calls(p, 'illuminate the kitchen light'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'kitchen light to blast'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on', brightness_pct: 100 }]]);
    // The list was replaced: "full" was a shipped level word and is not one any more.
    assert.deepEqual(calls(p, 'kitchen light at full'), []);
    assert.deepEqual(calls(p, 'lights up', 'Kitchen'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'lights up'), [], 'needs the area it is said in');
    // The shipped sentences still work beside the user's.
    assert.deepEqual(calls(p, 'turn on the kitchen light'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
  });

  it('the example in docs/sentences loads clean and does what it says', () => {
    const p = model(new SentenceSet({ userDir: new URL('../../docs/sentences', import.meta.url).pathname }));
    assert.deepEqual(p.sentences.problems, []);
    assert.deepEqual(calls(p, 'illuminate the kitchen light'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'let there be light in the kitchen'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'lights please', 'Living room'), [['control_switches', { entity: 'living_room_lamp.lamp', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'good night kitchen light'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_off' }]]);
    assert.deepEqual(calls(p, 'kitchen light to cinema'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on', brightness_pct: 15 }]]);
    assert.equal(
      p.understand('desk lamp 30%', names).text,
      'I don\'t know anything called "desk lamp", so I left everything as it was. The closest I know: the living room lamp.',
    );
  });

  it("takes Home Assistant's own custom-sentence files as they are (domain slot, number lists)", () => {
    const dir = folder({
      'ha.yaml': `language: "en"
intents:
  HassTurnOn:
    data:
      - sentences:
          - "wake up [the] {area}"
        slots:
          domain: light
  HassLightSet:
    data:
      - sentences:
          - "{name} glow {brightness}[%| percent]"
          - "<turn> <name> to <brightness> [bright(ness|er)]"
  HassClimateSetTemperature:
    data:
      - sentences:
          - "cosy {temperature} [degrees]"
`,
    });
    const p = model(new SentenceSet({ userDir: dir }));
    assert.deepEqual(p.sentences.problems, []);
    assert.deepEqual(calls(p, 'wake up the kitchen'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'kitchen light glow 40%'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on', brightness_pct: 40 }]]);
    assert.deepEqual(calls(p, 'turn the kitchen light to 40 percent brighter'), [
      ['control_lights', { entity: 'kitchen_light.light', action: 'turn_on', brightness_pct: 40 }],
    ]);
    assert.deepEqual(calls(p, 'cosy 21 degrees'), [['control_climate', { entity: 'thermostat.climate', action: 'set_temperature', temperature: 21 }]]);
  });

  it('a bad file is reported with file, line and reason; the rest keeps working', () => {
    const dir = folder({
      'broken.yaml': 'intents:\n  HassTurnOn:\n    data: [\n      - sentences: x\n',
      'mixed.yaml': `intents:
  HassTurnOn:
    data:
      - sentences:
          - "glow (up <target>"
          - "shine <target>"
          - "beam {colour_words} <target>"
  HassMakeCoffee:
    data:
      - sentences: ["brew"]
lists:
  broken_list:
    nothing: here
colours: 3
`,
    });
    const p = model(new SentenceSet({ userDir: dir }));
    const problems = p.sentences.problems.map((x) => ({ ...x, file: x.file.replace(`${dir}/`, '') }));
    const find = (file: string, re: RegExp) => problems.find((x) => x.file === file && re.test(x.reason));
    assert.ok(find('broken.yaml', /./), JSON.stringify(problems));
    assert.equal(find('mixed.yaml', /glow \(up <target>.*missing "\)"/)?.line, 5);
    assert.equal(find('mixed.yaml', /unknown list \{colour_words\}/)?.line, 7);
    assert.equal(find('mixed.yaml', /unknown intent "HassMakeCoffee"/)?.line, 8);
    assert.equal(find('mixed.yaml', /list broken_list needs "values", "range" or "wildcard"/)?.line, 13);
    assert.equal(find('mixed.yaml', /"colours" is not a sentence-file section/)?.line, 14);
    // The good sentence of the bad file, and everything shipped, still work.
    assert.deepEqual(calls(p, 'shine the kitchen light'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
    assert.deepEqual(calls(p, 'lock the front door'), [['control_locks', { entity: 'front_door.lock', action: 'lock' }]]);
    assert.deepEqual(calls(p, 'brew'), []);
  });

  it("replies are data: a user's responses replace the shipped ones; a bad template names file, line and reason", () => {
    const dir = folder({
      'replies.yaml': `responses:
  not_understood: "Hmm, no idea."
  unknown_device: "No {unknown} here, nothing changed."
  closest: "Maybe {nmes}?"
  try_this: "Try {examples"
  summary_which:
    one: "only {names}"
  make_coffee: "brewing"
  intents:
    HassTurnOn:
      default: "Turned on {{ slots.name }}"
`,
    });
    const p = model(new SentenceSet({ userDir: dir }));
    const problems = p.sentences.problems.map((x) => ({ ...x, file: x.file.replace(`${dir}/`, '') }));
    const find = (re: RegExp) => problems.find((x) => x.file === 'replies.yaml' && re.test(x.reason));
    assert.equal(find(/response closest: unknown slot \{nmes\} \(this response has: \{names\}\)/)?.line, 4, JSON.stringify(problems));
    assert.equal(find(/response try_this: unbalanced/)?.line, 5);
    assert.equal(find(/response summary_which: plural variants need at least "other"/)?.line, 7);
    assert.equal(find(/unknown response "make_coffee"/)?.line, 8);
    assert.equal(find(/Home Assistant's per-intent responses .* are not used/)?.line, 9);
    assert.equal(problems.length, 5, JSON.stringify(problems));
    // The good overrides are said; the bad ones keep the shipped wording.
    assert.equal(p.understand('bake me a cake', names).text?.startsWith('Hmm, no idea. You can say things like "'), true);
    assert.equal(p.understand('desk lamp 30%', names).text, 'No desk lamp here, nothing changed. The closest I know: the living room lamp.');
    // Shipped English is untouched by another set's overrides.
    assert.equal(
      model(SentenceSet.shipped()).understand('desk lamp 30%', names).text,
      'Sorry, I don\'t know a device called "desk lamp". Nothing was done. The closest I know: the living room lamp.',
    );
  });

  it('a missing folder is a problem, not a crash', () => {
    const set = new SentenceSet({ userDir: join(tmpdir(), 'hearth-no-such-sentences-folder') });
    sets.push(set);
    assert.match(set.problems[0].reason, /cannot read the sentence folder/);
  });

  it('reloads when a file in the folder changes, and keeps the good sentences when a change is bad', async () => {
    const dir = folder({});
    const p = model(new SentenceSet({ userDir: dir, watch: true }));
    assert.deepEqual(calls(p, 'radiate the kitchen light'), []);
    writeFileSync(join(dir, 'new.yaml'), 'intents:\n  HassTurnOn:\n    data:\n      - sentences: ["radiate <target>"]\n');
    await waitFor('the new sentence', () => calls(p, 'radiate the kitchen light').length > 0);
    writeFileSync(join(dir, 'new.yaml'), 'intents:\n  HassTurnOn:\n    data:\n      - sentences: ["radiate (<target>"]\n');
    await waitFor('the problem', () => p.sentences.problems.some((x) => x.file.endsWith('new.yaml') && x.line === 4));
    assert.deepEqual(calls(p, 'radiate the kitchen light'), []);
    assert.deepEqual(calls(p, 'turn on the kitchen light'), [['control_lights', { entity: 'kitchen_light.light', action: 'turn_on' }]]);
  });
});

describe('intent model: questions', () => {
  it('tells questions from commands', () => {
    for (const q of [
      'is the light on?',
      'Are the lights on',
      'what lights are on right now',
      'how many locks are open',
      'who is at the door',
      'any windows open?',
      'hey, is anyone in the office',
      'do I have any lights on',
      'could you tell me if the lamp is on',
    ])
      assert.equal(isQuestion(q), true, q);
    for (const c of [
      'turn on the light',
      'Can you turn on the light?',
      'could you please lock the front door',
      'lights off',
      'open the garage',
      'set the thermostat to 21',
    ])
      assert.equal(isQuestion(c), false, c);
  });

  it('a question is answered by reads alone, whatever a sentence would make of it', () => {
    const dir = folder({ 'odd.yaml': 'intents:\n  HassTurnOn:\n    data:\n      - sentences: ["is it time for <target>", "time for <target>"]\n' });
    const p = model(new SentenceSet({ userDir: dir }));
    assert.equal(calls(p, 'time for the kitchen light').length, 1, 'the sentence works as a command');
    const r = p.understand('is it time for the kitchen light', names);
    assert.equal(r.calls.length, 0);
    assert.equal(r.question, true);
    assert.match(r.text ?? '', /sounds like a question, so I changed nothing/);
  });

  it('answers which / how many / any in one sentence', async () => {
    const p = model(SentenceSet.shipped());
    const at = Date.now();
    const line = (id: string, value: string) =>
      stateText(demo.find((e) => e.id === id)!, { entityId: id, value, attributes: {}, updatedAt: at - 1000, available: true }, at);
    const ask = async (text: string, states: Record<string, string>) =>
      (await twoRounds(p, text, (c) => line(String(c.args.entity), states[String(c.args.entity)]))).said;
    const states = { 'kitchen_light.light': 'on', 'living_room_lamp.lamp': 'off' };
    assert.equal(await ask('which lights are on', states), 'The kitchen light is on.');
    assert.equal(await ask('how many lights are on', states), '1 of 2 is on: the kitchen light.');
    const dark = { 'kitchen_light.light': 'off', 'living_room_lamp.lamp': 'off' };
    // None on: said with the kind asked about (#42), not as a count of what was checked.
    assert.equal(await ask('are there any lights on', dark), 'No, no lights are on.');
    assert.equal(await ask('what lights are on', dark), 'No lights are on.');
    // "are all ...": yes, or the ones that are not (a yes/no over each would answer only the first).
    assert.equal(await ask('are all the lights off', states), 'No: the kitchen light is not off.');
    assert.equal(await ask('are the lights off', { 'kitchen_light.light': 'off', 'living_room_lamp.lamp': 'off' }), 'Yes, all 2 are off.');
  });
});

describe('intent model: presence, in the names people have', () => {
  const people = parseDeviceFile(
    'people.yaml',
    `devices:
  - { id: anna, name: Anna, entities: { phone: { kind: device_tracker, name: Anna, state_topic: p/anna } } }
  - { id: bob, name: Bob, entities: { phone: { kind: device_tracker, name: Bob, state_topic: p/bob } } }
`,
  );
  if (!('devices' in people)) throw new Error(JSON.stringify(people));
  const home = [...demo, ...people.devices.flatMap((d) => d.entities)];
  const { tools: homeTools } = generateTools(home, { shape: 'grouped', groupAbove: 40 }, async () => ({}));
  const p = new IntentProvider({ entities: () => home, tools: () => homeTools });
  const at = Date.now();
  const ask = async (text: string, where: Record<string, string>) =>
    (
      await twoRounds(
        p,
        text,
        (c) => {
          const id = String(c.args.entity);
          return stateText(home.find((e) => e.id === id)!, { entityId: id, value: where[id], attributes: {}, updatedAt: at - 1000, available: true }, at);
        },
        homeTools,
      )
    ).said;
  const away = { 'anna.phone': 'Office', 'bob.phone': 'home' };

  it('where someone is: home, away, or the zone their tracker reports, by name and without "the"', async () => {
    assert.equal(await ask('where is Anna?', away), 'Anna is at Office.');
    assert.equal(await ask('where is bob', away), 'Bob is home.');
    assert.equal(await ask('where is anna', { 'anna.phone': 'not_home' }), 'Anna is away.');
    // A zone is device data: control characters go and it is capped, whatever the tracker sends.
    const hostile = await ask('where is anna', { 'anna.phone': `Office\u001b[31m${'x'.repeat(500)}` });
    assert.match(hostile, /^Anna is at Office/);
    assert.doesNotMatch(hostile, /\u001b/);
    assert.ok(hostile.length < 80, hostile);
  });

  it('a yes/no about one person says yes or no, then where they are', async () => {
    assert.equal(await ask('is Anna home?', away), 'No, Anna is at Office.');
    assert.equal(await ask('is anna away', away), 'Yes, Anna is at Office.');
    assert.equal(await ask('has bob left', away), 'No, Bob is home.');
  });

  it('over everyone: whether anyone or everyone is home, who, and how many', async () => {
    assert.equal(await ask('is anyone home?', away), 'Yes: Bob is home.');
    assert.equal(await ask('is anybody home', { 'anna.phone': 'not_home', 'bob.phone': 'Work' }), 'No, none of the 2 I checked are home.');
    assert.equal(await ask('is everyone home', away), 'No: Anna is not home.');
    assert.equal(await ask('who is home', away), 'Bob is home.');
    assert.equal(await ask('who is away', away), 'Anna is away.');
    assert.equal(await ask('how many people are home', away), '1 of 2 is home: Bob.');
  });
});

describe('intent model: answers from the responses data', () => {
  const p = new IntentProvider({ entities: () => demo, tools: () => tools });
  const round2 = async (text: string, result: string) => (await twoRounds(p, text, () => result)).said;

  it('refusals are said as before the move to data', () => {
    const say = (text: string) => p.understand(text, names).text;
    assert.equal(say('dim the lamp'), "Sorry, I can't dim the living room lamp. It can be turned on or turned off.");
    assert.equal(say('dim the front door camera'), "Sorry, I can't dim the front door camera. I can show you its latest picture.");
    assert.equal(say('toggle the lamp'), "Sorry, I can't toggle the living room lamp: its state is not known yet; say on or off.");
    assert.equal(say('set the thermostat to 35'), 'Sorry, the thermostat takes a temperature from 7 to 30 °C.');
    assert.equal(say('when did the front door last open'), undefined, 'a history question is a call, not a reply');
    assert.equal(
      p.understand(
        'when did the front door last open',
        names.filter((n) => n !== 'host__get_history'),
      ).text,
      'Sorry, I cannot do that here: I have no tool to read the history of the front door lock in this conversation.',
    );
  });

  it('held, refused, failed and unconfirmed calls are said as before the move to data', async () => {
    assert.equal(
      await round2('unlock the front door', 'needs approval: Approval 1a2b is waiting for an owner.'),
      'Unlocking the front door lock needs approval: Approval 1a2b is waiting for an owner.',
    );
    assert.equal(
      await round2('set the kitchen light to 30%', 'not allowed: guests may not dim lights.'),
      'You are not allowed to set the kitchen light to 30%: guests may not dim lights.',
    );
    assert.equal(await round2('open the garage door', 'not allowed'), 'You are not allowed to open the garage door.');
    assert.equal(
      await round2('what is on in the kitchen', 'not allowed: reading the kitchen is off limits'),
      'You are not allowed to read the devices in the kitchen: reading the kitchen is off limits.',
    );
    assert.equal(await round2('turn on the lamp', 'failed: the broker is unreachable'), 'That did not work: the broker is unreachable.');
    assert.equal(await round2('turn on the lamp', 'unconfirmed: sent, no state came back'), 'I sent it, but the living room lamp has not confirmed yet.');
    assert.equal(await round2('set the thermostat to 21', 'needs approval: held.'), 'Setting the thermostat to 21 °C needs approval: held.');
  });
});

describe('intent sentences: named in hearth.yaml', () => {
  it("a user's folder reaches the agent of a running Hearth, and a folder that is not there stops it naming the setting", async () => {
    const dir = folder({ 'mine.yaml': 'intents:\n  HassTurnOff:\n    data:\n      - sentences: ["lights out [in] <target>"]\n' });
    const broker = await startAedes();
    const home = await startHome(broker, { extraSettings: { 'intent.sentences': dir } });
    // A folder that is not there stops the home from opening at all, naming the setting (not its first speaker).
    await assert.rejects(startHome(broker, { extraSettings: { 'intent.sentences': join(dir, 'missing') } }), /intent\.sentences: .*missing is not a folder/);
    try {
      const agent = await home.hearth.agent();
      const session = await agent.open({ principal: OWNER, permissions: 'host' });
      for await (const _ of await session.prompt('turn on the kitchen light')) void _;
      await waitFor('the kitchen light is on', () => home.sim.state('kitchen_light.light').value === 'on');
      for await (const _ of await session.prompt('lights out in the kitchen light')) void _;
      await waitFor('the kitchen light is off', () => home.sim.state('kitchen_light.light').value === 'off');
    } finally {
      await home.close();
      await broker.stop();
    }
  });
});
