// Benchmark: policy decisions and durable audit writes, each against a raw
// better-sqlite3 baseline measured in the same run on the same disk.
//
//   1. SqlitePolicy.decide() latency over ~100 rules vs a prepared SELECT by primary key.
//   2. Durable audited calls/s (begin + finish, synchronous=FULL) vs raw autocommit
//      INSERTs at synchronous=FULL and NORMAL; plus record(), group commit and a digest file.
//   3. verify() speed over the rows written.
//
// A script, not a test: it prints numbers and ratios and writes
// bench/results/policy-audit.json; it never fails on timings.
// Knobs (environment): BENCH_DECISIONS (50000), BENCH_AUDIT_CALLS (2000),
// BENCH_ROUNDS (3), BENCH_TMPDIR (parent of the temporary directory).
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase, type Db } from '../src/db/database.js';
import { SqlitePolicy, type NewRule } from '../src/policy/engine.js';
import type { PolicyRequest } from '../src/policy/types.js';
import { SqliteAuditLog } from '../src/audit/store.js';
import type { AuditCompletion, AuditEntry } from '../src/audit/types.js';
import type { Principal } from '../src/tools/types.js';
import {
  envInt,
  fmt,
  machine,
  median,
  nowNs,
  pick,
  prng,
  progress,
  ratio,
  secondsSince,
  summarize,
  table,
  tempDir,
  writeResults,
  type Summary,
} from './lib/harness.js';

const DECISIONS = envInt('BENCH_DECISIONS', 50_000);
const AUDIT_CALLS = envInt('BENCH_AUDIT_CALLS', 2_000);
const ROUNDS = envInt('BENCH_ROUNDS', 3);
const RULES_TOTAL = 100;
const GROUP_SIZES = [10, 50];
const TARGET_DECISION_P99_US = 1_000;
const TARGET_AUDIT_CALLS_PER_S = 1_000;

const tmp = tempDir('hearth-bench');
const startedAt = new Date().toISOString();
const t0 = nowNs();

console.log(`policy-audit: Node ${process.version}, ${machine().cpus} cores, temp dir ${tmp.path}`);
console.log(`  ${DECISIONS.toLocaleString('en-US')} decisions, ${AUDIT_CALLS.toLocaleString('en-US')} audited calls x ${ROUNDS} rounds\n`);

// ====================================================================== the home

interface KindInfo {
  actions: string[];
  classes: string[];
  tool: string;
}
const KINDS: Record<string, KindInfo> = {
  light: { actions: ['turn_on', 'turn_off'], classes: [], tool: 'control_lights' },
  switch: { actions: ['turn_on', 'turn_off'], classes: ['outlet'], tool: 'control_switches' },
  cover: { actions: ['open', 'close', 'stop', 'set_position'], classes: ['blind', 'curtain', 'garage', 'gate', 'door'], tool: 'control_covers' },
  lock: { actions: ['lock', 'unlock'], classes: ['door'], tool: 'control_locks' },
  climate: { actions: ['set_mode', 'set_temperature'], classes: [], tool: 'control_climate' },
  number: { actions: ['set_value'], classes: [], tool: 'control_numbers' },
  select: { actions: ['select_option'], classes: [], tool: 'control_selects' },
  button: { actions: ['press'], classes: [], tool: 'press_buttons' },
  sensor: { actions: [], classes: ['temperature', 'humidity', 'illuminance'], tool: 'get_state' },
  binary_sensor: { actions: [], classes: ['motion', 'door', 'window'], tool: 'get_state' },
};
const AREAS = ['Kitchen', 'Living Room', 'Bedroom', 'Kids Room', 'Garage', 'Hallway', 'Office', 'Garden'];

interface Entity {
  id: string;
  kind: string;
  area: string;
  deviceClass?: string;
  actions: string[];
  tool: string;
}

const slug = (s: string) => s.toLowerCase().replace(/\s+/g, '_');

function buildHome(rand: () => number): Entity[] {
  const out: Entity[] = [];
  const n = new Map<string, number>();
  const add = (area: string, kind: string, deviceClass?: string) => {
    const k = `${slug(area)}_${kind}`;
    const i = (n.get(k) ?? 0) + 1;
    n.set(k, i);
    const info = KINDS[kind]!;
    const dc = deviceClass ?? (info.classes.length ? pick(rand, info.classes) : undefined);
    out.push({ id: `${k}_${i}`, kind, area, ...(dc ? { deviceClass: dc } : {}), actions: info.actions, tool: info.tool });
  };
  const extra = ['switch', 'cover', 'lock', 'climate', 'number', 'select', 'button', 'binary_sensor', 'light'];
  for (const area of AREAS) {
    add(area, 'light');
    add(area, 'light');
    add(area, 'sensor');
    for (let i = 0; i < 4; i++) add(area, pick(rand, extra));
  }
  add('Garage', 'cover', 'garage');
  add('Hallway', 'lock', 'door');
  add('Garden', 'cover', 'gate');
  return out;
}

/** Principals: some carry their roles in the request, some get them from the principals table. */
const PRINCIPALS: { id: string; roles: string[]; stored: boolean }[] = [
  { id: 'chat:alice', roles: ['owner'], stored: false },
  { id: 'cli:root', roles: ['owner'], stored: true },
  { id: 'chat:bob', roles: ['adult'], stored: true },
  { id: 'chat:carol', roles: ['adult'], stored: false },
  { id: 'chat:kid', roles: ['child'], stored: true },
  { id: 'chat:teen', roles: ['child'], stored: false },
  { id: 'chat:guest1', roles: ['guest'], stored: true },
  { id: 'chat:guest2', roles: ['guest'], stored: false },
  { id: 'voice:kitchen', roles: ['voice'], stored: true },
  { id: 'voice:bedroom', roles: ['voice'], stored: false },
  { id: 'voice:kids', roles: ['voice', 'child'], stored: true },
  { id: 'flow:n1', roles: ['automation'], stored: true },
  { id: 'flow:n2', roles: ['automation'], stored: false },
  { id: 'flow:n3', roles: ['automation'], stored: false },
  { id: 'mcp:tok1', roles: [], stored: false },
  { id: 'mcp:tok2', roles: ['adult'], stored: true },
  { id: 'chat:stranger', roles: [], stored: false },
];

/** Hand-written rules: the shapes a household would write. The rest are generated. */
const HAND_RULES: NewRule[] = [
  { subject: 'role:owner', targetType: 'any', action: 'actuate', effect: 'allow', priority: 10 },
  {
    subject: 'role:owner',
    targetType: 'kind',
    target: 'lock',
    action: 'unlock',
    effect: 'allow',
    priority: 150,
    window: '08:00-22:00',
    note: 'owners unlock by day without confirming',
  },
  { subject: 'role:adult', targetType: 'kind', target: 'light|switch|climate|number|select|button', action: 'actuate', effect: 'allow', priority: 5 },
  { subject: 'role:adult', targetType: 'kind', target: 'cover', action: 'open|close|stop|set_position', effect: 'allow', priority: 5 },
  { subject: 'role:adult', targetType: 'kind', target: 'lock', action: 'lock', effect: 'allow', priority: 5 },
  {
    subject: 'role:adult',
    targetType: 'area',
    target: 'Office',
    action: 'actuate',
    effect: 'deny',
    priority: 20,
    window: '09:00-17:00',
    days: 'mon-fri',
    note: 'work hours',
  },
  { subject: 'role:child', targetType: 'area', target: 'Kids Room', action: 'turn_on|turn_off', effect: 'allow', priority: 5, window: '07:00-20:30' },
  { subject: 'role:child', targetType: 'any', action: 'actuate', effect: 'deny', priority: 50, window: '21:00-07:00', note: 'bedtime' },
  { subject: 'role:child', targetType: 'kind', target: 'lock|cover', action: '*', effect: 'deny', priority: 60 },
  { subject: 'role:child', targetType: 'area', target: 'Office', action: 'read', effect: 'deny', priority: 10 },
  { subject: 'role:guest', targetType: 'area', target: 'Living Room|Kitchen', action: 'turn_on|turn_off', effect: 'allow', priority: 5, days: 'fri-sun' },
  { subject: 'role:guest', targetType: 'kind', target: 'lock', action: '*', effect: 'deny', priority: 60 },
  { subject: 'role:guest', targetType: 'area', target: 'Office|Bedroom', action: 'read', effect: 'deny', priority: 10 },
  { subject: 'voice:*', targetType: 'kind', target: 'light', action: 'turn_on|turn_off', effect: 'allow', priority: 5 },
  { subject: 'voice:*', targetType: 'kind', target: 'lock', action: 'unlock', effect: 'deny', priority: 200 },
  { subject: 'voice:kids', targetType: 'any', action: 'actuate', effect: 'deny', priority: 40, window: '20:00-07:00' },
  { subject: 'voice:*', targetType: 'kind', target: 'climate', action: 'set_temperature', effect: 'allow', priority: 6, maxCalls: 10, perSeconds: 600 },
  { subject: 'role:automation', targetType: 'kind', target: 'switch|light', action: 'actuate', effect: 'allow', priority: 5, maxCalls: 30, perSeconds: 3600 },
  { subject: 'flow:*', targetType: 'capability', target: 'actuator', action: 'unlock|open', effect: 'deny', priority: 120 },
  { subject: 'mcp:*', targetType: 'any', action: 'actuate', effect: 'confirm', priority: 20 },
  { subject: 'mcp:*', targetType: 'capability', target: 'read', action: 'read', effect: 'allow', priority: 0, maxCalls: 100, perSeconds: 3600 },
  {
    subject: '*',
    targetType: 'device_class',
    target: 'garage',
    action: 'close',
    effect: 'allow',
    priority: 30,
    window: '22:00-06:00',
    note: 'anyone may close the garage at night',
  },
  { subject: '*', targetType: 'tool', target: 'control_locks', action: 'lock', effect: 'allow', priority: 30 },
  { subject: 'chat:alice|cli:*', targetType: 'tool', target: 'control_*', action: '*', effect: 'allow', priority: 12 },
  { subject: '*', targetType: 'entity', target: '*_button_*', action: 'press', effect: 'allow', priority: 1 },
];

const GEN_SUBJECTS = [
  ...PRINCIPALS.map((p) => p.id),
  'role:owner',
  'role:adult',
  'role:child',
  'role:guest',
  'role:voice',
  'role:automation',
  'chat:*',
  'voice:*',
  'flow:*',
  'chat:bob|chat:carol',
];

function generatedRule(rand: () => number, home: Entity[]): NewRule {
  const e = pick(rand, home);
  const subject = pick(rand, GEN_SUBJECTS);
  const type = pick(rand, ['entity', 'entity', 'entity', 'tool', 'tool', 'area', 'kind', 'device_class'] as const);
  let targetType: string = type;
  let target: string;
  switch (type) {
    case 'entity':
      target = pick(rand, [e.id, e.id, `${slug(e.area)}_*`, `*_${e.kind}_*`]);
      break;
    case 'tool':
      target = rand() < 0.6 ? e.id : e.tool;
      break;
    case 'area':
      target = e.area;
      break;
    case 'kind':
      target = e.kind;
      break;
    case 'device_class':
      if (e.deviceClass) target = e.deviceClass;
      else [targetType, target] = ['kind', e.kind];
      break;
  }
  const actuator = e.actions.length > 0;
  const action = actuator ? pick(rand, ['actuate', ...e.actions, e.actions.join('|'), 'set_*', '*', 'read']) : pick(rand, ['read', '*']);
  const r = rand();
  const effect = r < 0.5 ? 'allow' : r < 0.85 ? 'deny' : 'confirm';
  const rule: NewRule = { subject, targetType, target, action, effect, priority: Math.floor(rand() * 66) - 5 };
  if (rand() < 0.3) {
    const h = Math.floor(rand() * 24);
    const m = pick(rand, [0, 15, 30, 45]);
    const end = (h + 1 + Math.floor(rand() * 12)) % 24;
    const hm = (hh: number, mm: number) => `${String(hh).padStart(2, '0')}:${String(mm).padStart(2, '0')}`;
    rule.window = `${hm(h, m)}-${hm(end, m)}`;
  }
  if (rand() < 0.2) rule.days = pick(rand, ['mon-fri', 'sat,sun', 'fri-sun', 'mon,wed,fri']);
  if (effect !== 'deny' && rand() < 0.06) Object.assign(rule, { maxCalls: 5 + Math.floor(rand() * 50), perSeconds: 3600 });
  return rule;
}

// ====================================================================== 1. policy

interface PolicyResult {
  rules: number;
  rateLimitedRules: number;
  distinctRequests: number;
  baseline: Summary;
  decide: Summary;
  paths: Record<string, Summary>;
  effects: Record<string, number>;
  normalPass: { decide: Summary; rateLimited: Summary };
}

function benchPolicy(): PolicyResult {
  console.log('1. Policy decision latency');
  const rand = prng(0x5eed);
  const home = buildHome(rand);

  // --- the policy database, set up as Hearth.open does: one connection, the audit store sets synchronous=FULL on it.
  const db = openDatabase(join(tmp.path, 'policy.db'));
  const policy = new SqlitePolicy(db);
  new SqliteAuditLog(db);
  for (const p of PRINCIPALS) if (p.stored) policy.setRoles(p.id, p.roles);
  for (const r of HAND_RULES) policy.add(r);
  let guard = 0;
  while (policy.list().length < RULES_TOTAL) {
    try {
      policy.add(generatedRule(rand, home));
    } catch (err) {
      if (++guard > 1000) throw err;
    }
  }
  const rules = policy.list();
  const rateLimitedIds = new Set(rules.filter((r) => r.maxCalls !== null && r.effect !== 'deny').map((r) => r.id));
  console.log(
    `  ${rules.length} rules (${rules.filter((r) => r.builtin).length} built-in, ${rules.filter((r) => r.window || r.days).length} timed, ${rateLimitedIds.size} rate-limited), ` +
      `${home.length} entities, ${PRINCIPALS.length} principals; synchronous=${db.pragma('synchronous', { simple: true })} on the policy connection`,
  );

  // --- the workload: varied principals, tools, entities, actions; time sweeps two weeks.
  const base = new Date(2026, 0, 5, 0, 0, 0).getTime(); // a Monday, local time
  const span = 14 * 86_400_000;
  const makeRequests = (n: number, offset: number, r: () => number): PolicyRequest[] => {
    const out: PolicyRequest[] = [];
    for (let i = 0; i < n; i++) {
      const p = pick(r, PRINCIPALS);
      const e = pick(r, home);
      const read = e.actions.length === 0 || r() < 0.25;
      const action = read ? 'read' : pick(r, e.actions);
      const tool = read ? (r() < 0.5 ? 'get_state' : e.id) : r() < 0.5 ? e.id : e.tool;
      const principal: Principal = { id: p.id, roles: p.stored ? [] : p.roles };
      out.push({
        principal,
        tool,
        capability: read ? 'read' : 'actuator',
        action,
        entityId: e.id,
        area: e.area,
        kind: e.kind,
        ...(e.deviceClass ? { deviceClass: e.deviceClass } : {}),
        args: read ? {} : { entity: e.id },
        at: new Date(offset + Math.floor((i * span) / n)),
      });
    }
    return out;
  };
  const requests = makeRequests(DECISIONS, base, prng(0xdec1de));
  // Which calls are the first with their cache key (principal, roles, tool, capability, action, target fields)?
  const seen = new Set<string>();
  const firstSeen = new Uint8Array(DECISIONS);
  requests.forEach((q, i) => {
    const key = [q.principal.id, q.tool, q.capability, q.action, q.entityId, q.area, q.kind, q.deviceClass ?? ''].join('\0');
    if (!seen.has(key)) {
      seen.add(key);
      firstSeen[i] = 1;
    }
  });

  // --- baseline: a prepared SELECT by primary key on a 100-row table (real WAL file).
  const raw = new Database(join(tmp.path, 'baseline-select.db'));
  raw.pragma('journal_mode = WAL');
  raw.exec(
    'CREATE TABLE rules (id INTEGER PRIMARY KEY, subject TEXT NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL, effect TEXT NOT NULL, priority INTEGER NOT NULL)',
  );
  const ins = raw.prepare('INSERT INTO rules (id, subject, target, action, effect, priority) VALUES (?, ?, ?, ?, ?, ?)');
  raw.transaction(() => {
    for (let i = 1; i <= 100; i++) ins.run(i, `chat:user${i}`, `entity_${i}`, 'turn_on|turn_off', i % 3 ? 'allow' : 'deny', i % 10);
  })();
  const select = raw.prepare('SELECT * FROM rules WHERE id = ?');
  const ids = Int32Array.from({ length: DECISIONS }, (_, i) => 1 + ((i * 37 + 11) % 100));
  for (let i = 0; i < 2_000; i++) select.get(ids[i % DECISIONS]); // warm-up
  const baseLat = new Float64Array(DECISIONS);
  const pb = progress('baseline SELECT', DECISIONS);
  let sink = 0;
  for (let i = 0; i < DECISIONS; i++) {
    const a = nowNs();
    const row = select.get(ids[i]) as { priority: number };
    const b = nowNs();
    baseLat[i] = Number(b - a) / 1000;
    sink += row.priority;
    if ((i & 1023) === 0) pb.tick(i);
  }
  pb.end();
  raw.close();

  // --- warm-up decisions (JIT) with principals whose cache keys do not overlap the measured workload.
  const warm = makeRequests(2_000, base - span, prng(0x3a3a)).map((q, i) => ({ ...q, principal: { id: `warm:${i % 40}`, roles: [] } }));
  for (const q of warm) policy.decide(q);

  const measure = (reqs: PolicyRequest[], label: string) => {
    const lat = new Float64Array(reqs.length);
    const ruleIds = new Int32Array(reqs.length);
    const effects: Record<string, number> = { allow: 0, deny: 0, confirm: 0, 'deny (rate limit)': 0, 'default (no rule)': 0 };
    const pg = progress(label, reqs.length);
    for (let i = 0; i < reqs.length; i++) {
      const a = nowNs();
      const d = policy.decide(reqs[i]!);
      const b = nowNs();
      lat[i] = Number(b - a) / 1000;
      ruleIds[i] = d.ruleId ?? 0;
      if (d.ruleId === null) effects['default (no rule)']!++;
      else if (d.reason.startsWith('rate limit')) effects['deny (rate limit)']!++;
      else effects[d.effect]!++;
      if ((i & 1023) === 0) pg.tick(i);
    }
    pg.end();
    return { lat, ruleIds, effects };
  };

  const m = measure(requests, 'decide()');
  const split = (pred: (i: number) => boolean) => {
    const out: number[] = [];
    for (let i = 0; i < m.lat.length; i++) if (pred(i)) out.push(m.lat[i]!);
    return summarize(out);
  };
  const rl = (i: number) => rateLimitedIds.has(m.ruleIds[i]!);
  const paths = {
    'cached, decided in memory': split((i) => !firstSeen[i] && !rl(i)),
    'first seen (cache miss), in memory': split((i) => !!firstSeen[i] && !rl(i)),
    'rate-limited rule (rule_hits SQL)': split(rl),
  };

  // --- the same workload two weeks later with the connection at synchronous=NORMAL: what the rule_hits fsyncs cost.
  db.pragma('synchronous = NORMAL');
  const later = requests.map((q) => ({ ...q, at: new Date(q.at!.getTime() + span) }));
  const n2 = measure(later, 'decide() at synchronous=NORMAL');
  const rl2: number[] = [];
  for (let i = 0; i < n2.lat.length; i++) if (rateLimitedIds.has(n2.ruleIds[i]!)) rl2.push(n2.lat[i]!);
  db.close();

  const result: PolicyResult = {
    rules: rules.length,
    rateLimitedRules: rateLimitedIds.size,
    distinctRequests: seen.size,
    baseline: summarize(baseLat),
    decide: summarize(m.lat),
    paths,
    effects: m.effects,
    normalPass: { decide: summarize(n2.lat), rateLimited: summarize(rl2) },
  };
  if (sink < 0) console.log(sink); // keep the baseline's reads observable

  const row = (name: string, s: Summary, base?: Summary) => [
    name,
    s.count.toLocaleString('en-US'),
    fmt(s.p50, 2),
    fmt(s.p99, 2),
    fmt(s.max, 0),
    base ? ratio(s.p50, base.p50) : '',
    base ? ratio(s.p99, base.p99) : '',
  ];
  console.log(
    `  ${seen.size.toLocaleString('en-US')} distinct requests; decisions: ${Object.entries(m.effects)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}\n`,
  );
  table(
    ['latency (µs)', 'calls', 'p50', 'p99', 'max', 'p50 vs base', 'p99 vs base'],
    [
      row('baseline: raw SELECT by primary key', result.baseline),
      row('decide(), all calls', result.decide, result.baseline),
      ...Object.entries(paths).map(([k, s]) => row(`  ${k}`, s, result.baseline)),
      row('decide() at synchronous=NORMAL, all', result.normalPass.decide, result.baseline),
      row('  rate-limited rule at NORMAL', result.normalPass.rateLimited, result.baseline),
    ],
  );
  const met = result.decide.p99 < TARGET_DECISION_P99_US;
  console.log(
    `\n  target: decision p99 < 1 ms -> ${met ? 'MET' : 'NOT MET'} (p99 ${fmt(result.decide.p99, 2)} µs, ${ratio(result.decide.p99, result.baseline.p99)} the SELECT's p99; ` +
      `in-memory p99 ${fmt(paths['cached, decided in memory'].p99, 2)} µs)\n`,
  );
  return result;
}

// ====================================================================== 2. audit

const COMPLETION: AuditCompletion = { outcome: 'confirmed', latencyMs: 42, echo: '{"brightness":128,"state":"ON"}' };

function entries(prefix: string, n: number): AuditEntry[] {
  const out: AuditEntry[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      requestId: `${prefix}-${i}`,
      principal: 'chat:alice',
      session: 'sess-7f3a',
      runId: null,
      tool: 'control_lights',
      entityId: `kitchen_light_${i % 8}`,
      action: 'turn_on',
      args: { brightness: 128, entity: `kitchen_light_${i % 8}` },
      decision: 'allow',
      ruleId: 7,
      reason: 'rule #7 (role:owner may actuate anything) allows',
    });
  }
  return out;
}

interface Variant {
  name: string;
  /** Commits (fsyncs of the WAL at FULL) per call. */
  commits: string;
  run(round: number): { seconds: number; latUs?: Float64Array };
}

interface AuditResult {
  calls: number;
  rounds: number;
  variants: { name: string; commits: string; perRound: number[]; median: number; latency?: Summary }[];
}

function benchAudit(): { audit: AuditResult; stores: { audit: SqliteAuditLog; digest: SqliteAuditLog; close(): void } } {
  console.log('2. Audit commit rate (durable audited calls/s)');
  const N = AUDIT_CALLS;
  const ROW = `${'x'.repeat(76)}`; // + a 24-char ISO time: ~100 bytes of row data

  const rawDb = (file: string, sync: 'FULL' | 'NORMAL') => {
    const d = new Database(join(tmp.path, file));
    d.pragma('journal_mode = WAL');
    d.pragma(`synchronous = ${sync}`);
    d.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, at TEXT NOT NULL, payload TEXT NOT NULL)');
    return { d, insert: d.prepare('INSERT INTO rows (at, payload) VALUES (?, ?)') };
  };
  const rawFull = rawDb('baseline-full.db', 'FULL');
  const rawNormal = rawDb('baseline-normal.db', 'NORMAL');

  const auditDb: Db = openDatabase(join(tmp.path, 'audit.db'));
  const audit = new SqliteAuditLog(auditDb); // durability: full, the default
  const digestDb: Db = openDatabase(join(tmp.path, 'audit-digest.db'));
  const digest = new SqliteAuditLog(digestDb, { digestFile: join(tmp.path, 'digest', 'audit.digest') });
  const normalDb: Db = openDatabase(join(tmp.path, 'audit-normal.db'));
  const normal = new SqliteAuditLog(normalDb, { durability: 'connection' });
  normalDb.pragma('synchronous = NORMAL');
  console.log(
    `  synchronous on the audit connection: ${auditDb.pragma('synchronous', { simple: true })} (2 = FULL); journal_mode ${auditDb.pragma('journal_mode', { simple: true })}`,
  );

  const timed = (label: string, fn: (i: number) => void, step = 1) => {
    const lat = new Float64Array(Math.ceil(N / step));
    const pg = progress(label, N);
    const start = nowNs();
    for (let i = 0, k = 0; i < N; i += step, k++) {
      const a = nowNs();
      fn(i);
      lat[k] = Number(nowNs() - a) / 1000;
      if ((k & 127) === 0) pg.tick(i);
    }
    const seconds = secondsSince(start);
    pg.end();
    return { seconds, latUs: lat };
  };

  const raw = (db: typeof rawFull, tag: string) => (round: number) =>
    timed(`raw ${tag} r${round}`, () => {
      db.insert.run(new Date().toISOString(), ROW);
    });

  const variants: Variant[] = [
    { name: 'baseline: raw INSERT, synchronous=FULL', commits: '1', run: raw(rawFull, 'FULL') },
    { name: 'baseline: raw INSERT, synchronous=NORMAL', commits: '1 (no fsync)', run: raw(rawNormal, 'NORMAL') },
    {
      name: 'audited call: begin() + finish()',
      commits: '2',
      run: (round) => {
        const es = entries(`seq-r${round}`, N);
        return timed(`begin+finish r${round}`, (i) => {
          const id = audit.begin(es[i]!);
          audit.finish(id, COMPLETION);
        });
      },
    },
    {
      name: 'record() (denied/failed call)',
      commits: '1',
      run: (round) => {
        const es = entries(`rec-r${round}`, N);
        return timed(`record r${round}`, (i) => {
          audit.record(es[i]!, { outcome: 'denied', error: 'denied by policy', latencyMs: 0 });
        });
      },
    },
    ...GROUP_SIZES.map(
      (k): Variant => ({
        name: `group commit: ${k} begins, then ${k} finishes`,
        commits: `2/${k}`,
        run: (round) => {
          const es = entries(`g${k}-r${round}`, N);
          return timed(
            `group ${k} r${round}`,
            (i) => {
              const batch = es.slice(i, i + k);
              const ids = audit.group(() => batch.map((e) => audit.begin(e)));
              audit.group(() => {
                for (const id of ids) audit.finish(id, COMPLETION);
              });
            },
            k,
          );
        },
      }),
    ),
    {
      name: "finish() joins the next call's begin()",
      commits: '1',
      run: (round) => {
        // What a store that commits a completion with the next write would do (one group per call).
        const es = entries(`pig-r${round}`, N);
        let prev = 0;
        const r = timed(`piggyback r${round}`, (i) => {
          prev = audit.group(() => {
            if (prev) audit.finish(prev, COMPLETION);
            return audit.begin(es[i]!);
          });
        });
        audit.finish(prev, COMPLETION);
        return r;
      },
    },
    {
      name: 'begin() + finish() with audit.digestFile',
      commits: '2 + digest/200 ms',
      run: (round) => {
        const es = entries(`dig-r${round}`, N);
        return timed(`digest r${round}`, (i) => {
          const id = digest.begin(es[i]!);
          digest.finish(id, COMPLETION);
        });
      },
    },
    {
      name: 'begin() + finish(), digest every 100 ms (emulated)',
      commits: '2 + digest/100 ms',
      run: (round) => {
        // What a store that coalesces digest writes (at most one per 100 ms) would do: the store
        // without digestFile, plus its public writeDigest() on that schedule.
        const es = entries(`dd-r${round}`, N);
        const file = join(tmp.path, 'digest', 'coalesced.digest');
        let last = nowNs();
        const r = timed(`coalesced digest r${round}`, (i) => {
          const id = audit.begin(es[i]!);
          audit.finish(id, COMPLETION);
          if (nowNs() - last >= 100_000_000n) {
            audit.writeDigest(file);
            last = nowNs();
          }
        });
        audit.writeDigest(file);
        return r;
      },
    },
    {
      name: `group commit ${GROUP_SIZES[0]} with audit.digestFile`,
      commits: `2/${GROUP_SIZES[0]} + digest`,
      run: (round) => {
        const k = GROUP_SIZES[0]!;
        const es = entries(`dg-r${round}`, N);
        return timed(
          `group ${k} + digest r${round}`,
          (i) => {
            const batch = es.slice(i, i + k);
            const ids = digest.group(() => batch.map((e) => digest.begin(e)));
            digest.group(() => {
              for (const id of ids) digest.finish(id, COMPLETION);
            });
          },
          k,
        );
      },
    },
    {
      name: 'not durable: begin() + finish(), synchronous=NORMAL',
      commits: '2 (no fsync)',
      run: (round) => {
        const es = entries(`nrm-r${round}`, N);
        return timed(`NORMAL r${round}`, (i) => {
          const id = normal.begin(es[i]!);
          normal.finish(id, COMPLETION);
        });
      },
    },
  ];

  const perRound = variants.map(() => [] as number[]);
  const lats = variants.map(() => [] as number[]);
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`  round ${round}/${ROUNDS} ...`);
    variants.forEach((v, vi) => {
      const { seconds, latUs } = v.run(round);
      perRound[vi]!.push(N / seconds);
      if (latUs) for (const x of latUs) lats[vi]!.push(x);
    });
  }
  rawFull.d.close();
  rawNormal.d.close();

  const result: AuditResult = {
    calls: N,
    rounds: ROUNDS,
    variants: variants.map((v, i) => ({
      name: v.name,
      commits: v.commits,
      perRound: perRound[i]!.map((x) => Math.round(x)),
      median: Math.round(median(perRound[i]!)),
      latency: summarize(lats[i]!),
    })),
  };
  const rawFullRate = result.variants[0]!.median;
  const rawNormalRate = result.variants[1]!.median;
  console.log('');
  table(
    ['per second (median of rounds)', 'commits/call', 'calls/s', 'vs raw FULL', 'vs raw NORMAL', 'p50 ms', 'p99 ms'],
    result.variants.map((v, i) => [
      v.name,
      v.commits,
      v.median.toLocaleString('en-US'),
      i === 0 ? '' : ratio(v.median, rawFullRate),
      i === 1 ? '' : ratio(v.median, rawNormalRate),
      fmt(v.latency!.p50 / 1000, 3),
      fmt(v.latency!.p99 / 1000, 3),
    ]),
  );
  console.log('  (latency columns: one call, or for group commit one batch of begins+finishes)');
  const seq = result.variants[2]!.median;
  const met = seq >= TARGET_AUDIT_CALLS_PER_S;
  console.log(
    `\n  target: >= 1,000 durable audited calls/s -> ${met ? 'MET' : 'NOT MET'} (${seq.toLocaleString('en-US')} calls/s sequential, ` +
      `= ${(2 * seq).toLocaleString('en-US')} commits/s, ${ratio(2 * seq, rawFullRate)} the raw FULL commit rate)`,
  );
  // Every durable way of writing an audited call, against the target (the baselines and the NORMAL reference are not audited calls).
  for (const v of result.variants.slice(2).filter((x) => !x.name.startsWith('not durable') && !x.name.startsWith('record'))) {
    console.log(`    ${v.median >= TARGET_AUDIT_CALLS_PER_S ? 'meets    ' : 'BELOW    '} ${v.name}: ${v.median.toLocaleString('en-US')} calls/s`);
  }
  console.log('');
  return {
    audit: result,
    stores: {
      audit,
      digest,
      close() {
        auditDb.close();
        digestDb.close();
        normalDb.close();
      },
    },
  };
}

// ====================================================================== 3. verify

interface VerifyBench {
  name: string;
  rows: number;
  ok: boolean;
  seconds: number[];
  rowsPerSecond: number;
}

function benchVerify(stores: { audit: SqliteAuditLog; digest: SqliteAuditLog }): VerifyBench[] {
  console.log('3. verify() over the rows written');
  const out: VerifyBench[] = [];
  for (const [name, store] of [
    ['verify(), audit.db', stores.audit],
    ['verify() with digest file, audit-digest.db', stores.digest],
  ] as const) {
    // The store writes its digest at most every 200 ms: bring it up to date first.
    store.flushDigest();
    const seconds: number[] = [];
    let rows = 0;
    let ok = true;
    for (let i = 0; i < 3; i++) {
      const a = nowNs();
      const r = store.verify();
      seconds.push(secondsSince(a));
      rows = r.rows;
      ok &&= r.ok;
      if (!r.ok) console.log(`  WARNING: ${name}: chain broken: ${r.firstBroken?.reason}`);
    }
    out.push({ name, rows, ok, seconds: seconds.map((s) => Math.round(s * 1e4) / 1e4), rowsPerSecond: Math.round(rows / median(seconds)) });
  }
  table(
    ['verify (median of 3)', 'rows', 'ms', 'rows/s', 'chain'],
    out.map((v) => [v.name, v.rows.toLocaleString('en-US'), fmt(median(v.seconds) * 1000, 1), v.rowsPerSecond.toLocaleString('en-US'), v.ok ? 'ok' : 'BROKEN']),
  );
  console.log('');
  return out;
}

// ====================================================================== main

try {
  const policy = benchPolicy();
  const { audit, stores } = benchAudit();
  const verify = benchVerify(stores);
  stores.close();

  const seq = audit.variants[2]!.median;
  const targets = [
    { name: 'decision p99 < 1 ms', value: policy.decide.p99, unit: 'µs', met: policy.decide.p99 < TARGET_DECISION_P99_US },
    { name: '>= 1,000 durable audited calls/s (begin+finish, FULL)', value: seq, unit: 'calls/s', met: seq >= TARGET_AUDIT_CALLS_PER_S },
  ];
  const file = writeResults('policy-audit', {
    bench: 'policy-audit',
    startedAt,
    seconds: Math.round(secondsSince(t0) * 10) / 10,
    machine: machine(),
    config: { decisions: DECISIONS, auditCalls: AUDIT_CALLS, rounds: ROUNDS, groupSizes: GROUP_SIZES },
    note: 'All latency summaries are in microseconds (audit: per call, or per batch for group commit); rates are per second, median of rounds. Ratios compare against baselines measured in this run.',
    policy,
    audit,
    verify,
    targets,
  });
  for (const t of targets) console.log(`TARGET policy-audit ${t.name}: ${t.met ? 'MET' : 'NOT MET'} (${t.value.toLocaleString('en-US')} ${t.unit})`);
  console.log(`results: ${file} (${secondsSince(t0).toFixed(1)} s)`);
} finally {
  tmp.cleanup();
}
