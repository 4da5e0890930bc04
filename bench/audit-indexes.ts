// Benchmark: what the audit's indexes cost the one durable write of a call (issues 18, 33).
//
// Since migration 0014 a pending call entry is written to the log alone (its only key is the append order);
// the index readers look calls up by (request id, principal, entity, time) is a separate table brought up to the
// log when the calls pause (or after an outcome's commit once the tail after it is long: issue 45). This measures
// begin() (the pending row's commit and fsync, the caller's one unavoidable write) and an outcome commit, on
// the shipped schema and on the same store with the indexes of before 0014 put back on the log (the request
// id's UNIQUE and the partial principal, entity and time indexes: four b-trees more in the pending row's
// commit), interleaved call by call on the same disk, against a raw durable INSERT (one b-tree).
// A third store has the log's own integrity features taken off (issue 45, round six): its CHECK constraints (the
// database refusing an entry that is not a well-formed call, outcome or seal) and AUTOINCREMENT (the high-water mark
// in sqlite_sequence, one more page in every commit, by which `verify` sees rows cut off the log's tail). What those
// cost is part of what the trust model requires of Hearth's log, kept: this prints its price.
//
// Knobs: BENCH_AUDIT_INDEX_CALLS (3000), BENCH_TMPDIR.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteAuditLog } from '../src/audit/store.js';
import { openDatabase } from '../src/db/database.js';
import { envInt, fmt, machine, nowNs, ratio, secondsSince, summarize, table, tempDir, writeResults } from './lib/harness.js';

const CALLS = envInt('BENCH_AUDIT_INDEX_CALLS', 3000);
const WARMUP = 200;
const BEFORE_0014 = [
  'CREATE UNIQUE INDEX audit_entry_request ON audit_entry (request_id)',
  "CREATE INDEX audit_entry_principal ON audit_entry (principal, id) WHERE kind = 'call'",
  "CREATE INDEX audit_entry_entity ON audit_entry (entity_id, id) WHERE kind = 'call'",
  "CREATE INDEX audit_entry_at ON audit_entry (at) WHERE kind = 'call'",
];

const t0 = nowNs();
const tmp = tempDir('hearth-bench-audit-indexes');
console.log(`audit-indexes: Node ${process.version}, ${machine().cpus} cores; ${CALLS.toLocaleString('en-US')} calls per variant, interleaved\n`);

/**
 * The log's table rebuilt without its CHECK constraints and without AUTOINCREMENT (the columns, the outcome fold's
 * index and the views as shipped): the same store, less integrity.
 */
function withoutIntegrityFeatures(db: Database.Database): void {
  const sqlOf = (type: string, name: string) =>
    (db.prepare('SELECT sql FROM sqlite_master WHERE type = ? AND name = ?').get(type, name) as { sql: string }).sql;
  const table = sqlOf('table', 'audit_entry');
  const lean = table
    .replace(/,\s*CHECK \(kind <> 'call'[\s\S]*$/, ')')
    .replace(/CHECK \([^()]*(\([^()]*\))?[^()]*\)/g, '')
    .replace('AUTOINCREMENT', '');
  if (lean.includes('CHECK') || lean.includes('AUTOINCREMENT'))
    throw new Error(`audit-indexes: the log's schema changed; update withoutIntegrityFeatures:\n${table}`);
  const kept = [sqlOf('index', 'audit_entry_outcome_of'), sqlOf('view', 'audit'), sqlOf('view', 'audit_call_ids')];
  db.exec('DROP VIEW audit_call_ids; DROP VIEW audit; DROP TABLE audit_entry;');
  db.exec(lean);
  for (const sql of kept) db.exec(sql);
}

function variant(name: string, create: string[] | ((db: Database.Database) => void)) {
  const db = openDatabase(join(tmp.path, `${name}.db`));
  if (typeof create === 'function') create(db);
  else for (const sql of create) db.exec(sql);
  const audit = new SqliteAuditLog(db, {});
  const begin: number[] = [];
  const outcome: number[] = [];
  let n = 0;
  return {
    name,
    begin,
    outcome,
    once(measure: boolean): void {
      const i = n++;
      let a = nowNs();
      const id = audit.begin({
        requestId: `bench-${i}-${process.pid}`,
        principal: `chat:user-${i % 7}`,
        session: null,
        runId: null,
        tool: 'control_switch',
        entityId: `switch_${i % 50}.switch`,
        action: i % 2 ? 'turn_off' : 'turn_on',
        args: { action: i % 2 ? 'turn_off' : 'turn_on' },
        decision: 'allow',
        ruleId: 7,
        reason: 'allowed by rule 7',
      });
      if (measure) begin.push(Number(nowNs() - a) / 1e6);
      audit.finishLater(id, { outcome: 'confirmed', latencyMs: 12, echo: '{"value":"on","attributes":{}}' });
      a = nowNs();
      audit.flushOutcomes();
      if (measure) outcome.push(Number(nowNs() - a) / 1e6);
    },
    close: async () => {
      await audit.close();
      db.close();
    },
  };
}

const raw = new Database(join(tmp.path, 'raw.db'));
raw.pragma('journal_mode = WAL');
raw.pragma('synchronous = FULL');
raw.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, at TEXT NOT NULL, payload TEXT NOT NULL)');
const insert = raw.prepare('INSERT INTO rows (at, payload) VALUES (?, ?)');
const rawMs: number[] = [];
const payload = 'x'.repeat(300);

const shipped = variant('shipped (0014: the log alone)', []);
const indexed = variant('the indexes of before 0014 on the log', BEFORE_0014);
const bare = variant('the log without its CHECKs and AUTOINCREMENT', withoutIntegrityFeatures);
const stores = [shipped, indexed, bare];
try {
  for (let i = 0; i < WARMUP + CALLS; i++) {
    const measure = i >= WARMUP;
    const a = nowNs();
    insert.run(new Date().toISOString(), payload);
    if (measure) rawMs.push(Number(nowNs() - a) / 1e6);
    // Rotate which goes first, so none always follows another's fsync.
    for (let k = 0; k < stores.length; k++) stores[(i + k) % stores.length]!.once(measure);
  }
  const r = summarize(rawMs);
  const rows = stores.map((v) => ({ name: v.name, begin: summarize(v.begin), outcome: summarize(v.outcome) }));
  table(
    ['commit (ms)', 'calls', 'p50', 'p90', 'p99', 'p50 vs raw INSERT'],
    [
      ['baseline: raw INSERT, synchronous=FULL (1 b-tree)', r.count.toLocaleString('en-US'), fmt(r.p50, 3), fmt(r.p90, 3), fmt(r.p99, 3), ''],
      ...rows.flatMap((x) => [
        [
          `begin(), ${x.name} (commit + fsync)`,
          x.begin.count.toLocaleString('en-US'),
          fmt(x.begin.p50, 3),
          fmt(x.begin.p90, 3),
          fmt(x.begin.p99, 3),
          ratio(x.begin.p50, r.p50),
        ],
        [
          `  outcome, ${x.name} (commit to the WAL)`,
          x.outcome.count.toLocaleString('en-US'),
          fmt(x.outcome.p50, 3),
          fmt(x.outcome.p90, 3),
          fmt(x.outcome.p99, 3),
          '',
        ],
      ]),
    ],
  );
  const [s, l, b] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
  console.log(
    `\n  the four indexes of before 0014 cost begin() ${fmt(l.begin.p50 - s.begin.p50, 3)} ms at p50 (${ratio(l.begin.p50, s.begin.p50)} the shipped one); an outcome ${fmt(s.outcome.p50 - l.outcome.p50, 3)} ms more (the index's copy is no longer in it); begin() is ${fmt(s.begin.p50 - r.p50, 3)} ms over the raw INSERT`,
  );
  console.log(
    `  the log's integrity features (CHECK constraints, AUTOINCREMENT's high-water mark) cost begin() ${fmt(s.begin.p50 - b.begin.p50, 3)} ms at p50 (${ratio(s.begin.p50, b.begin.p50)} the store without them), an outcome ${fmt(s.outcome.p50 - b.outcome.p50, 3)} ms: kept (what the trust model requires of the log)`,
  );
  const file = writeResults('audit-indexes', {
    bench: 'audit-indexes',
    seconds: Math.round(secondsSince(t0) * 10) / 10,
    machine: machine(),
    config: { calls: CALLS, warmup: WARMUP, before0014: BEFORE_0014, withoutIntegrityFeatures: 'audit_entry without its CHECK constraints and AUTOINCREMENT' },
    note: 'Milliseconds. begin() = SqliteAuditLog.begin (one IMMEDIATE transaction, commit, fdatasync of the WAL); outcome = finishLater + flushOutcomes (commit to the WAL, fsynced lazily).',
    raw: r,
    variants: rows,
  });
  console.log(`results: ${file} (${secondsSince(t0).toFixed(1)} s)`);
} finally {
  await shipped.close();
  await indexed.close();
  await bare.close();
  raw.close();
  tmp.cleanup();
}
