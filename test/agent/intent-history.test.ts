// History questions on the offline model: "when did the front door last
// open?", "how warm was it this morning?" become one get_history call with the
// right entity and window, and the tool's real answer (a real history table on
// a SQLite file, read by the tool's own text builder) comes back as a sentence.
// Commands never reach the history tool, and a session without it is told so.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type OpenAI from 'openai';
import { IntentProvider } from '../../src/agent/providers/intent/index.js';
import { openDatabase } from '../../src/db/database.js';
import { HistoryStore } from '../../src/history/store.js';
import { historyAnswer } from '../../src/tools/history-text.js';
import { twoRounds, demo, tools, names } from './helpers.js';
import { useHttpHome } from '../helpers/http-home.js';
import { ask as askChat, chatClient } from '../helpers/openai-client.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-intent-history-'));
const db = openDatabase(join(dir, 'hearth.db'));
after(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

// Local times: "this morning" and "at 8" are the speaker's hours.
const at = (h: number, m = 0, day = 0) => new Date(2026, 5, 1 + day, h, m).getTime();
const NOW = at(14, 30);
const utc = (ts: number) => `${new Date(ts).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

const store = new HistoryStore(db);
store.write([
  { entityId: 'front_door.lock', ts: at(7, 10), state: 'unlocked' },
  { entityId: 'front_door.lock', ts: at(7, 15), state: 'locked' },
  { entityId: 'front_door.lock', ts: at(11, 40), state: 'unlocked' },
  { entityId: 'front_door.lock', ts: at(11, 42), state: 'locked' },
  { entityId: 'hallway_motion.occupancy', ts: at(12, 5), state: 'on' },
  { entityId: 'hallway_motion.occupancy', ts: at(12, 7), state: 'off' },
  { entityId: 'living_room_climate.temperature', ts: at(5, 0), num: 18 },
  { entityId: 'living_room_climate.temperature', ts: at(7, 0), num: 18.5 },
  { entityId: 'living_room_climate.temperature', ts: at(7, 50), num: 19.2 },
  { entityId: 'living_room_climate.temperature', ts: at(10, 0), num: 21 },
  { entityId: 'living_room_climate.temperature', ts: at(13, 0), num: 23 },
  // Issue 42: the lamp on since 9:20, the garage open this morning, a cold night, the heating's last run.
  { entityId: 'living_room_lamp.lamp', ts: at(8, 0), state: 'off' },
  { entityId: 'living_room_lamp.lamp', ts: at(9, 20), state: 'on' },
  { entityId: 'garage_door.door', ts: at(8, 5), state: 'open' },
  { entityId: 'garage_door.door', ts: at(8, 9), state: 'closed' },
  { entityId: 'living_room_climate.temperature', ts: at(22, 0, -1), num: 19.5 },
  { entityId: 'living_room_climate.temperature', ts: at(2, 30), num: 16.5 },
  { entityId: 'living_room_climate.temperature', ts: at(4, 0), num: 17 },
  { entityId: 'thermostat.climate', ts: at(6, 0), state: 'heat' },
  { entityId: 'thermostat.climate', ts: at(9, 0), state: 'off' },
]);

const model = new IntentProvider({ entities: () => demo, tools: () => tools, now: () => NOW });

/** Round 1, the tool run on the real table, round 2: the calls and the spoken answer. */
async function ask(text: string): Promise<{ calls: Array<[string, Record<string, unknown>]>; answer: string }> {
  const { first, said } = await twoRounds(model, text, (c) => {
    const entity = demo.find((e) => e.id === c.args.entity)!;
    return historyAnswer(store, entity, c.args, NOW).text ?? '';
  });
  return { calls: first.calls.map((c) => [c.tool, c.args] as [string, Record<string, unknown>]), answer: said };
}

describe('intent model: history questions', () => {
  it('"when did the front door last open": the lock\'s history, answered with its last unlock', async () => {
    const r = await ask('when did the front door last open');
    assert.deepEqual(r.calls, [['get_history', { entity: 'front_door.lock', since: '-365d' }]]);
    assert.equal(r.answer, `The front door lock was last unlocked 3 h ago (${utc(at(11, 40))}).`);
  });

  it('"when was the hallway motion last seen": the last time it saw motion', async () => {
    const r = await ask('when was the hallway motion last seen');
    assert.deepEqual(r.calls, [['get_history', { entity: 'hallway_motion.occupancy', since: '-365d' }]]);
    assert.equal(r.answer, `The hallway motion last saw motion 2 h ago (${utc(at(12, 5))}).`);
  });

  it('"how warm was it this morning": the temperature sensor from 6 to 12, answered with its range', async () => {
    const r = await ask('how warm was it this morning');
    assert.equal(r.calls.length, 1);
    const [tool, args] = r.calls[0];
    assert.equal(tool, 'get_history');
    assert.equal(args.entity, 'living_room_climate.temperature');
    assert.equal(Date.parse(String(args.since)), at(6));
    assert.equal(Date.parse(String(args.until)), at(12));
    assert.equal(r.answer, 'The living room temperature was between 18.5 °C and 21 °C, 19.57 °C on average (3 readings).');
  });

  it('"what was the living room temperature at 8": the reading before 8', async () => {
    const r = await ask('what was the living room temperature at 8');
    const [tool, args] = r.calls[0];
    assert.equal(tool, 'get_history');
    assert.equal(args.entity, 'living_room_climate.temperature');
    assert.equal(Date.parse(String(args.since)), at(7));
    assert.equal(Date.parse(String(args.until)), at(8));
    assert.match(r.answer, new RegExp(`^The living room temperature was 19\\.2 °C at ${utc(at(7, 50))} \\(\\d+ h ago\\)\\.$`));
  });

  it('"how long has the lamp been on": since its last change into on (#42)', async () => {
    const r = await ask('how long has the lamp been on?');
    assert.deepEqual(r.calls, [['get_history', { entity: 'living_room_lamp.lamp', since: '-365d' }]]);
    assert.equal(r.answer, `The living room lamp has been on since ${utc(at(9, 20))} (5 h ago).`);
    const locked = await ask('how long has the front door been unlocked?');
    assert.equal(locked.answer, `The front door lock is not unlocked: it has been locked since ${utc(at(11, 42))} (3 h ago).`);
  });

  it('"was the garage door open today": yes, when; and no over a period it was not (#42)', async () => {
    const r = await ask('was the garage door open today?');
    assert.equal(r.calls[0][0], 'get_history');
    assert.equal(r.calls[0][1].entity, 'garage_door.door');
    assert.equal(Date.parse(String(r.calls[0][1].since)), at(0));
    assert.equal(r.answer, `Yes, the garage door was open at ${utc(at(8, 5))} (6 h ago).`);
    const afternoon = await ask('was the garage door open this afternoon?');
    assert.match(afternoon.answer, /^No, the garage door was not open between .+ UTC and .+ UTC\.$/);
  });

  it('"what was the lowest temperature in the living room last night": that reading and when (#42)', async () => {
    const r = await ask('what was the lowest temperature in the living room last night?');
    const [, args] = r.calls[0];
    assert.equal(args.entity, 'living_room_climate.temperature');
    assert.equal(Date.parse(String(args.since)), at(20, 0, -1));
    assert.equal(Date.parse(String(args.until)), at(7));
    assert.equal(r.answer, `The living room temperature was lowest at ${utc(at(2, 30))} (12 h ago): 16.5 °C.`);
    const high = await ask('what was the highest temperature in the living room this morning?');
    assert.equal(high.answer, `The living room temperature was highest at ${utc(at(10, 0))} (5 h ago): 21 °C.`);
  });

  it('"when did the heating last run": the thermostat last in a mode but off (#42)', async () => {
    const r = await ask('when did the heating last run?');
    assert.deepEqual(r.calls, [['get_history', { entity: 'thermostat.climate', since: '-365d' }]]);
    assert.equal(r.answer, `The thermostat was last on 9 h ago (${utc(at(6, 0))}).`);
  });

  it('"has anyone moved recently": the motion history of the last hour, and the answer says the window (#42)', async () => {
    const r = await ask('has anyone moved recently?');
    assert.deepEqual(r.calls, [['get_history', { entity: 'hallway_motion.occupancy', since: '-1h' }]]);
    assert.equal(r.answer, `No, the hallway motion saw no motion between ${utc(at(13, 30))} and ${utc(at(14, 30))}.`);
    const today = await ask('has anyone been in the hallway today?');
    assert.equal(today.answer, `Yes, the hallway motion saw motion at ${utc(at(12, 5))} (2 h ago).`);
  });

  it("an hour still to come today means yesterday's; nothing recorded then says so", async () => {
    const r = await ask('what was the living room temperature at 9 pm');
    const [, args] = r.calls[0];
    assert.equal(Date.parse(String(args.until)), at(21, 0, -1));
    assert.equal(r.answer, 'The living room temperature has no recorded history for that time.');
  });

  it('a history question is a question: it never actuates, and without the history tool it is told, not guessed', () => {
    const q = model.understand('when did the kitchen light last turn on', names);
    assert.equal(q.question, true);
    assert.deepEqual(
      q.calls.map((c) => c.tool),
      ['get_history'],
    );
    const without = model.understand(
      'when did the front door last open',
      names.filter((n) => n !== 'host__get_history'),
    );
    assert.deepEqual(without.calls, []);
    assert.match(without.text ?? '', /no tool to read the history of the front door lock/);
  });
});

describe('history questions through a running Hearth (HTTP chat, the real get_history on its database)', () => {
  const home = useHttpHome({
    tokens: {
      owner: { name: 'owner-phone', principal: 'http:owner-phone', roles: ['owner'] },
      guest: { name: 'guest-phone', principal: 'http:guest-phone', roles: ['guest'] },
    },
  });
  let owner: OpenAI;
  let guest: OpenAI;
  const client = (apiKey: string) => chatClient(home.server.url, apiKey);

  before(() => {
    owner = client(home.secret('owner'));
    guest = client(home.secret('guest'));
    home.hearth.policy.add({
      subject: 'role:guest',
      targetType: 'entity',
      target: 'hallway_motion.occupancy',
      action: 'read',
      effect: 'deny',
      priority: 10,
      note: 'test: guests may not watch the hallway',
    });
    const now = Date.now();
    home.hearth.history.write([
      { entityId: 'hallway_motion.occupancy', ts: now - 3 * 3_600_000, state: 'on' },
      { entityId: 'hallway_motion.occupancy', ts: now - 3 * 3_600_000 + 60_000, state: 'off' },
    ]);
  });

  it('"when was the hallway motion last seen" is answered from the recorded history, and nothing is actuated', async () => {
    const before = home.hearth.audit.list({ limit: 1 })[0]?.id ?? 0;
    const answer = await askChat(owner, 'when was the hallway motion last seen');
    assert.match(answer, /^The hallway motion last saw motion 3 h ago \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\)\.$/);
    assert.equal(home.hearth.audit.list({ limit: 1 })[0]?.id ?? 0, before, 'a read is not an action');
  });

  it('a caller who may not read the sensor is not told its history', async () => {
    const answer = await askChat(guest, 'when was the hallway motion last seen');
    assert.doesNotMatch(answer, /saw motion|\d+ h ago/);
    // As of a sensor the home does not have: the offline model is told what the caller may read.
    assert.match(answer, /not allowed|cannot|don't know|could not find/i);
  });
});
