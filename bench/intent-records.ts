// Benchmark (issue 42): a question the home's own records answer, end to end on the offline model, in the
// 1,000-entity home of bench/intent.ts with a year of history and 100,000 audit rows in one SQLite file:
// round 1 (the sentence to a get_history call), the tool on the real history table (the text get_history
// returns), round 2 (that text to the spoken answer); and an audit question ("who unlocked the front door lock
// today?": get_audit on the audit's call index, about 2,000 of the 100,000 rows that lock's). Target: 50 ms a
// question (printed, never asserted).
//
// Baseline, in the same run: the tool alone (historyAnswer on the same table and arguments), the least the
// question can cost.
//
// A script, not a test: it prints numbers and writes bench/results/intent-records.json.
// Knobs: BENCH_RECORDS_ROUNDS (20), BENCH_TMPDIR.
import { join } from 'node:path';
import type { ChatMessage } from '../src/agent/provider.js';
import { IntentProvider } from '../src/agent/providers/intent/provider.js';
import { SqliteAuditLog } from '../src/audit/store.js';
import { openDatabase } from '../src/db/database.js';
import { HistoryStore } from '../src/history/store.js';
import { historyAnswer } from '../src/tools/history-text.js';
import { readAudit } from '../src/tools/records-text.js';
import { generateTools, toolSpecs } from '../src/tools/generator.js';
import { generatedHomeOf } from '../test/helpers/big-home.js';
import { envInt, fmt, machine, nowNs, ratio, secondsSince, summarize, table, tempDir, writeResults } from './lib/harness.js';

const ROUNDS = envInt('BENCH_RECORDS_ROUNDS', 20);
const AUDIT_ROWS = envInt('BENCH_RECORDS_AUDIT_ROWS', 100_000);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const startedAt = new Date().toISOString();
const t0 = nowNs();

const entities = generatedHomeOf(1000);
const { tools } = generateTools(entities, { shape: 'grouped', groupAbove: 40 }, async () => ({}));
const specs = toolSpecs(tools);
const byId = new Map(entities.map((e) => [e.id, e]));
const now = Date.now();

const dir = tempDir('hearth-bench-intent-records');
const db = openDatabase(join(dir.path, 'hearth.db'));
// Seeding only: the measured reads do not depend on how durably the rows were written.
db.pragma('synchronous = OFF');

// A year of history: hourly temperatures, a lamp on each evening, a garage opened each morning, heating mornings.
const history = new HistoryStore(db);
const rows: Parameters<HistoryStore['write']>[0] = [];
for (let t = now - 365 * DAY; t < now; t += HOUR) {
  const hour = new Date(t).getHours();
  rows.push({ entityId: 'living_room_sensor.temperature', ts: t, num: Math.round((19 + 3 * Math.sin((hour / 24) * 2 * Math.PI)) * 10) / 10 });
  if (hour === 18) rows.push({ entityId: 'reading_corner_lights.main', ts: t, state: 'on' });
  if (hour === 23) rows.push({ entityId: 'reading_corner_lights.main', ts: t, state: 'off' });
  if (hour === 8) rows.push({ entityId: 'garage_door.main', ts: t, state: 'open' });
  if (hour === 9) rows.push({ entityId: 'garage_door.main', ts: t + 60_000, state: 'closed' });
  if (hour === 6) rows.push({ entityId: 'living_room_thermostat.main', ts: t, state: 'heat' });
  if (hour === 9) rows.push({ entityId: 'living_room_thermostat.main', ts: t, state: 'off' });
}
for (let i = 0; i < rows.length; i += 5000) history.write(rows.slice(i, i + 5000));
console.log(`  seeded ${rows.length} history rows in ${fmt(secondsSince(t0), 1)} s`);

// 100,000 audit rows: calls and their outcomes, over the same year.
const audit = new SqliteAuditLog(db, {});
const targets = entities.filter((e) => ['light', 'switch', 'lock', 'cover'].includes(e.kind)).slice(0, 50);
// Group commit (beginDurable): many calls share one commit, as a busy daemon's do.
const seedCall = async (i: number) => {
  const e = targets[i % targets.length];
  const id = await audit.beginDurable({
    requestId: `bench-${i}`,
    principal: i % 3 ? 'chat:anna' : 'voice:kitchen',
    session: null,
    runId: null,
    tool: `control_${e.kind}s`,
    entityId: e.id,
    action: e.kind === 'lock' ? 'unlock' : 'turn_on',
    args: { entity: e.id },
    decision: 'allow',
    ruleId: null,
    reason: 'bench',
  });
  audit.finishLater(id, { outcome: 'confirmed', latencyMs: 100 });
};
for (let i = 0; i < AUDIT_ROWS; i += 500) await Promise.all(Array.from({ length: Math.min(500, AUDIT_ROWS - i) }, (_, j) => seedCall(i + j)));
audit.flushOutcomes();
// As a running daemon's file is: the seeding's write-ahead log folded back into the database.
db.pragma('wal_checkpoint(TRUNCATE)');
const seeded = secondsSince(t0);

const provider = new IntentProvider({ entities: () => entities, tools: () => tools, now: () => now });
const QUESTIONS = [
  'how long have the reading corner lights been on?',
  'was the garage door open today?',
  'what was the lowest temperature in the living room last night?',
  'when did the living room thermostat last run?',
];
// An audit question (issue 42): get_audit on the audit's call index, as the pipeline reads it.
const lock = targets.find((e) => e.kind === 'lock');
if (lock) QUESTIONS.push(`who unlocked the ${lock.name.toLowerCase()} today?`);

/** One question end to end: round 1, the tool on the table, round 2. Returns the answer and the tool's share. */
async function ask(text: string): Promise<{ answer: string; toolMs: number }> {
  const signal = new AbortController().signal;
  const first: ChatMessage[] = [{ role: 'user', content: text }];
  let calls: Array<{ id: string; name: string; arguments: string }> = [];
  for await (const e of provider.stream({ model: 'hearth-intent', messages: first, tools: specs, signal })) if (e.type === 'done') calls = e.toolCalls;
  let toolMs = 0;
  const results = calls.map((c) => {
    const args = JSON.parse(c.arguments) as Record<string, unknown>;
    const t = nowNs();
    const entity = byId.get(String(args.entity));
    const out =
      (c.name.endsWith('get_audit')
        ? // The audit rows were written while seeding, after `now`: read up to the time asked.
          readAudit(
            (f) => audit.list(f),
            entity,
            args,
            (id) => byId.get(id)?.name,
            () => true,
            Date.now(),
          )
        : historyAnswer(history, entity!, args, now)
      ).text ?? '';
    toolMs += Number(nowNs() - t) / 1e6;
    return { role: 'tool' as const, tool_call_id: c.id, content: out };
  });
  const messages: ChatMessage[] = [...first, { role: 'assistant', content: null, tool_calls: calls }, ...results];
  let answer = '';
  for await (const e of provider.stream({ model: 'hearth-intent', messages, tools: specs, signal })) if (e.type === 'token') answer += e.text;
  return { answer, toolMs };
}

console.log(
  `intent-records: Node ${process.version}, ${machine().cpus} cores; ${entities.length.toLocaleString('en-US')} entities, ${rows.length.toLocaleString('en-US')} history rows (a year), ${AUDIT_ROWS.toLocaleString('en-US')} audit rows (seeded in ${fmt(seeded, 1)} s); ${QUESTIONS.length} questions x ${ROUNDS} rounds\n`,
);
for (const q of QUESTIONS) await ask(q);
const per = new Map<string, { all: number[]; tool: number[]; answer: string }>();
for (let r = 0; r < ROUNDS; r++) {
  for (const q of QUESTIONS) {
    const t = nowNs();
    const { answer, toolMs } = await ask(q);
    const ms = Number(nowNs() - t) / 1e6;
    const slot = per.get(q) ?? per.set(q, { all: [], tool: [], answer }).get(q)!;
    slot.all.push(ms);
    slot.tool.push(toolMs);
  }
}
table(
  ['question (end to end)', 'p50 ms', 'p99 ms', 'tool alone p50 (baseline)', 'ratio', 'target 50 ms'],
  [...per].map(([q, s]) => {
    const a = summarize(s.all);
    const b = summarize(s.tool);
    return [q, fmt(a.p50, 2), fmt(a.p99, 2), fmt(b.p50, 2), ratio(a.p50, b.p50), a.p50 <= 50 ? 'within' : 'OVER'];
  }),
);
console.log('');
for (const [q, s] of per) console.log(`  ${q}\n    -> ${s.answer}`);
const file = writeResults('intent-records', {
  startedAt,
  machine: machine(),
  entities: entities.length,
  historyRows: rows.length,
  auditRows: AUDIT_ROWS,
  rounds: ROUNDS,
  questions: Object.fromEntries([...per].map(([q, s]) => [q, { endToEnd: summarize(s.all), tool: summarize(s.tool), answer: s.answer }])),
});
console.log(`\n  results: ${file}`);
db.close();
dir.cleanup();
