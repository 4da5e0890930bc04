// `hearth audit ...`: read the audit log (tail, follow, show one row), export
// it, and verify its hash chain. Only the database is opened: no broker, no
// device files. `tail -f` polls the file, since another process (the running
// bridge, a `hearth call`) writes the rows.
import { hearthCommand } from './command-name.js';
import { agoInstant, parseTimeFilter } from '../util/time.js';
import { loadAuditKey, sequenceFileOf } from '../audit/key.js';
import { createWriteStream, existsSync } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { type Command, Option } from 'commander';
import { verify, type VerifyResult } from '../audit/chain.js';
import { OUTCOMES, type StoredAuditRow } from '../audit/row.js';
import { SqliteAuditLog, type AcceptEvidence, type AuditListFilter } from '../audit/store.js';
import type { ExportFormat } from '../audit/export.js';
import type { Outcome } from '../audit/types.js';
import { openDatabase, type Db } from '../db/database.js';
import { formatDuration } from '../util/time.js';
import { configOrExit, databasePathOrExit, withConfigOptions, type CommonFlags } from './options.js';
import { table } from './format.js';
import { auditRowJson, outcomeWord } from '../present/audit-row.js';
import { CliFailure, wholeNumber } from './failure.js';
import { ask, printJson } from './via-daemon.js';

export const FOLLOW_POLL_MS = 500;

interface Opened {
  db: Db;
  store: SqliteAuditLog;
  path: string;
  digestFile?: string;
  /** audit.keyFile: verify requires the digest's signature. */
  keyFile?: string;
}

/** Open the database only (reading; a missing file is an error rather than a new empty log). */
async function openAudit(flags: CommonFlags): Promise<Opened> {
  const { config } = await configOrExit(flags);
  const path = config.database.path;
  if (path !== ':memory:' && !existsSync(path)) {
    throw new CliFailure(
      `no database at ${path}: nothing has been recorded there (start the bridge with \`${hearthCommand()} start\`, or pass --db <file>)`,
      1,
    );
  }
  const db = openDatabase(path);
  // A reader: leave the connection's sync setting alone.
  const store = new SqliteAuditLog(db, { durability: 'connection' });
  return {
    db,
    store,
    path,
    ...(config.audit.digestFile ? { digestFile: config.audit.digestFile } : {}),
    ...(config.audit.keyFile ? { keyFile: config.audit.keyFile } : {}),
  };
}

async function withAudit(flags: CommonFlags, body: (o: Opened) => Promise<void> | void): Promise<void> {
  const opened = await openAudit(flags);
  try {
    await body(opened);
  } finally {
    opened.db.close();
  }
}

/**
 * `2025-06-01T18:00` (this machine's time, as a person at it means), `2025-06-01`, epoch ms, or a time ago: `90s`,
 * `15m`, `2h`, `7d`, `-24h` (the offsets the HTTP API takes too).
 */
export function parseTime(flag: string, raw: string, now = Date.now()): Date {
  const ago = agoInstant(raw, now);
  if (ago !== undefined) return new Date(ago);
  if (/^\s*\d+\s*$/.test(raw)) {
    const t = parseTimeFilter(raw, now);
    if (t instanceof Error) throw new CliFailure(`${flag} ${JSON.stringify(raw)}: ${t.message}`);
    return new Date(t);
  }
  const d = new Date(raw);
  if (!raw.trim() || Number.isNaN(d.getTime())) {
    throw new CliFailure(
      `${flag} ${JSON.stringify(raw)}: not a time; use ISO 8601 (2025-06-01, 2025-06-01T18:00, 2025-06-01T16:00Z), epoch milliseconds, or a time ago (30m, 2h, 7d)`,
    );
  }
  return d;
}

// ---------------------------------------------------------------- formatting

const pad2 = (n: number) => String(n).padStart(2, '0');

/** Local time, to the second. */
export function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

const HEADER = ['TIME', 'ID', 'PRINCIPAL', 'TOOL', 'ENTITY', 'ACTION', 'DECISION', 'OUTCOME', 'LATENCY', 'ERROR'];

function rowCells(r: StoredAuditRow): string[] {
  return [
    localTime(r.at),
    String(r.id),
    r.principal,
    r.tool,
    r.entityId ?? '-',
    r.action,
    r.ruleId !== null ? `${r.decision} #${r.ruleId}` : r.decision,
    outcomeWord(r),
    r.latencyMs !== null ? formatDuration(r.latencyMs) : '-',
    r.error ? clip(r.error.replace(/\s+/g, ' '), 120) : '',
  ];
}

/** Fixed-width columns: a cell longer than its column is cut with …, so every line keeps the header's column starts. */
function padRow(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === cells.length - 1 ? c : clip(c, widths[i]).padEnd(widths[i]))).join('  ');
}

/** Least and most width of each column but the last (ERROR, which runs to the end of the line) when following. */
const FOLLOW_MIN = [19, 4, 16, 20, 24, 8, 10, 11, 7];
const FOLLOW_MAX = [19, 8, 32, 32, 40, 16, 20, 11, 8];
/** How many recent rows size the columns when following (their names are likely to come again). */
const FOLLOW_SAMPLE = 200;

/**
 * The widths `tail -f` uses for the whole run, computed once: recent rows may widen a column up to its most,
 * rows that come later are cut to fit (the table cannot widen what is already printed).
 */
function followWidths(first: string[][]): number[] {
  return HEADER.slice(0, -1).map((h, i) => Math.min(FOLLOW_MAX[i], Math.max(h.length, FOLLOW_MIN[i], ...first.map((cells) => (cells[i] ?? '').length))));
}

// ---------------------------------------------------------------- tail

interface TailFlags extends CommonFlags {
  lines: string;
  follow?: boolean;
  json?: boolean;
  principal?: string;
  entity?: string;
  outcome?: Outcome;
  since?: string;
}

function tailFilter(flags: Pick<TailFlags, 'principal' | 'entity' | 'outcome' | 'since'>): AuditListFilter {
  return {
    ...(flags.principal ? { principal: flags.principal } : {}),
    ...(flags.entity ? { entityId: flags.entity } : {}),
    ...(flags.outcome ? { outcome: flags.outcome } : {}),
    ...(flags.since ? { since: parseTime('--since', flags.since) } : {}),
  };
}

/** `hearth audit tail -f`: print the latest rows, then new ones as they come, until stopped. */
async function follow(o: Opened, flags: TailFlags): Promise<void> {
  const n = wholeNumber('-n', flags.lines, { min: 1, max: 10_000 });
  const filter = tailFilter(flags);
  // The newest id first, then the rows up to it: a row written meanwhile comes with the first poll, not never.
  let last = o.store.list({ order: 'desc', limit: 1 })[0]?.id ?? 0;
  const rows = o.store
    .list({ ...filter, order: 'desc', limit: n })
    .filter((r) => r.id <= last)
    .reverse();
  const out = (s: string) => process.stdout.write(s);

  // Follow: print what is there, then poll for rows with a higher id; a row
  // shown while pending is shown again once it completes.
  const widths = followWidths([...o.store.list({ order: 'desc', limit: FOLLOW_SAMPLE }), ...rows].map(rowCells));
  const show = (r: StoredAuditRow) => out(flags.json ? `${JSON.stringify(auditRowJson(r))}\n` : `${padRow(rowCells(r), widths)}\n`);
  if (!flags.json) out(`${padRow(HEADER, widths)}\n`);
  const pending = new Set<number>();
  for (const r of rows) {
    show(r);
    if (r.outcome === 'pending') pending.add(r.id);
  }
  if (!flags.json) process.stderr.write(`following ${o.path} (every ${FOLLOW_POLL_MS} ms); Ctrl+C to stop\n`);

  const poll = () => {
    for (const id of [...pending]) {
      const r = o.store.get(id);
      if (r?.outcome !== 'pending') {
        pending.delete(id);
        if (r) show(r);
      }
    }
    for (;;) {
      const fresh = o.store.list({ afterId: last, order: 'asc', limit: 1000 });
      for (const r of fresh) {
        last = r.id;
        if (!matches(r, filter)) continue;
        show(r);
        if (r.outcome === 'pending') pending.add(r.id);
      }
      if (fresh.length < 1000) break;
    }
  };
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      try {
        poll();
      } catch (err) {
        process.stderr.write(`hearth: reading the audit log failed: ${(err as Error).message}\n`);
        process.exitCode = 1;
        stop();
      }
    }, FOLLOW_POLL_MS);
    const stop = () => {
      clearInterval(timer);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

function matches(r: StoredAuditRow, f: AuditListFilter): boolean {
  if (f.principal !== undefined && r.principal !== f.principal) return false;
  if (f.entityId !== undefined && r.entityId !== f.entityId) return false;
  if (f.outcome !== undefined && r.outcome !== f.outcome) return false;
  if (f.since !== undefined && new Date(r.at) < new Date(f.since)) return false;
  return true;
}

// ---------------------------------------------------------------- show

function pretty(text: string | null, indent: string): string {
  if (text === null) return '-';
  try {
    const v = JSON.parse(text) as unknown;
    if (v && typeof v === 'object') return JSON.stringify(v, null, 2).replace(/\n/g, `\n${indent}`);
  } catch {
    // not JSON: as it is
  }
  return text;
}

function showRow(r: StoredAuditRow): string {
  const W = 14;
  const indent = ' '.repeat(W);
  const fields: Array<[string, string]> = [
    ['id', String(r.id)],
    ['at', `${r.at} (${localTime(r.at)} local)`],
    ['request id', r.requestId],
    ['principal', r.principal],
    ['session', r.session ?? '-'],
    ['run id', r.runId ?? '-'],
    ['tool', r.tool],
    ['entity', r.entityId ?? '-'],
    ['action', r.action],
    ['args', JSON.stringify(r.args, null, 2).replace(/\n/g, `\n${indent}`)],
    ['decision', r.decision],
    ['rule', r.ruleId !== null ? `#${r.ruleId}` : '- (the default)'],
    ['reason', r.reason || '-'],
    ['outcome', outcomeWord(r) === r.outcome ? r.outcome : `${outcomeWord(r)} (stored as ${r.outcome}: a confirm rule held it; nothing was sent)`],
    ['error', r.error ?? '-'],
    ['latency', r.latencyMs !== null ? `${r.latencyMs} ms` : '-'],
    ['echo', pretty(r.echo, indent)],
    ['completed at', r.completedAt ?? '-'],
    ['prev hash', r.prevHash],
    ['hash', r.hash],
    ['done hash', r.doneHash ?? '- (pending)'],
  ];
  return fields.map(([k, v]) => `${k.padEnd(W)}${v}`).join('\n');
}

// ---------------------------------------------------------------- export

async function writeAll(stream: Writable, chunk: string): Promise<void> {
  if (!stream.write(chunk)) await once(stream, 'drain');
}

async function exportTo(o: Opened, flags: CommonFlags & { format: ExportFormat; since?: string; until?: string; out?: string }): Promise<void> {
  const since = flags.since !== undefined ? parseTime('--since', flags.since) : undefined;
  const until = flags.until !== undefined ? parseTime('--until', flags.until) : undefined;
  const lines = o.store.export(flags.format, { ...(since ? { since } : {}), ...(until ? { until } : {}) });
  let stream: Writable;
  if (flags.out) {
    const file = createWriteStream(flags.out, { flags: 'w' });
    try {
      await once(file, 'open');
    } catch (err) {
      throw new CliFailure(`--out ${flags.out}: ${(err as Error).message}`, 1);
    }
    stream = file;
  } else {
    stream = process.stdout;
  }
  // A closed pipe (`| head`) ends the export quietly.
  let closed = false;
  let failure: Error | undefined;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    closed = true;
    if (err.code !== 'EPIPE') failure = err;
    stream.emit('drain');
  });
  let rows = 0;
  let buf = '';
  for (const line of lines) {
    if (closed) break;
    rows++;
    buf += `${line}\n`;
    if (buf.length >= 64 * 1024) {
      await writeAll(stream, buf);
      buf = '';
    }
  }
  if (buf && !closed) await writeAll(stream, buf);
  if (failure) throw new CliFailure(`${flags.out ? `--out ${flags.out}` : 'stdout'}: ${failure.message}`, 1);
  if (flags.format === 'csv') rows = Math.max(0, rows - 1);
  if (flags.out) {
    (stream as ReturnType<typeof createWriteStream>).end();
    await once(stream, 'finish');
    process.stderr.write(`exported ${rows} rows as ${flags.format} to ${flags.out}\n`);
  }
}

// ---------------------------------------------------------------- verify

/**
 * What `hearth audit verify` says. ok: the chain verifies and a signed digest vouches for every entry (the exit
 * code is 1 otherwise: a broken chain, a finding about the digest or sequence file, or entries not vouched for).
 */
export function verifyText(result: VerifyResult, digestFile: string | undefined, keyed = false): { ok: boolean; text: string } {
  const cmd = hearthCommand();
  if (result.ok) {
    const u = result.unvouched;
    const extra = [
      result.pending ? `${result.pending} pending` : '',
      result.digest
        ? `digest ${digestFile}${result.digest.seq ? ` #${result.digest.seq}` : ''} matches (${result.digest.count} rows up to id ${result.digest.lastId}, ${result.digest.at}${keyed ? ', signed with the audit key' : ''})`
        : digestFile
          ? ''
          : 'no digest file: a cut-off tail cannot be detected (set audit.digest_file)',
    ].filter(Boolean);
    const summary = `${result.rows} ${result.rows === 1 ? 'entry' : 'entries'} (${result.calls} ${result.calls === 1 ? 'call' : 'calls'}, as \`hearth audit tail\` lists them, and their outcomes)${result.rows ? `, ids 1..${result.lastId}` : ''}${extra.length ? `; ${extra.join('; ')}` : ''}`;
    if (u) {
      return {
        ok: false,
        text: `chain linked, but NOT vouched for: ${u.count} ${u.count === 1 ? 'entry' : 'entries'} after the signed digest (ids ${u.from}..${u.to}) ${u.count === 1 ? 'is' : 'are'} NOT vouched for: chained, but no Hearth signed over them (a running Hearth signs within a moment of each call: run this again; after a crash, or if they were added to the file, check them with \`${cmd} audit show <id>\`, then \`${cmd} audit accept --through ${u.to}\`)\n  ${summary}`,
      };
    }
    // Entries are what the chain links; calls are what `audit tail` lists: say both.
    return { ok: true, text: `chain verified: ${summary}` };
  }
  const b = result.firstBroken!;
  const where = b.id > 0 ? `row ${b.id}` : 'the digest';
  const next = result.findings?.length
    ? `\n  a file the audit's trust rests on is missing, unreadable or older than one written since: no Hearth signs a digest until an owner has looked. \`${cmd} audit accept\` prints the evidence (what is wrong, the last digest number known, the entries no digest vouches for) and vouches for the log as it is now`
    : '';
  return {
    ok: false,
    text: `audit chain BROKEN at ${where} (${b.kind}): ${b.reason}\n  ${result.rows} rows in the log; nothing from ${where} on can be trusted as recorded${next}`,
  };
}

/** `audit show` and `audit export` print rows as stored: say so when the chain does not verify. */
function warnUnverified(o: Opened): void {
  let key: Buffer | undefined;
  try {
    key = o.keyFile ? loadAuditKey(o.keyFile).key : undefined;
  } catch {
    key = undefined;
  }
  const result = verify(o.db, { ...(o.digestFile ? { digestFile: o.digestFile } : {}), ...(key ? { key, sequenceFile: sequenceFileOf(o.keyFile!) } : {}) });
  if (!result.ok) {
    const b = result.firstBroken!;
    process.stderr.write(
      `hearth: warning: the audit chain does not verify (${b.id > 0 ? `row ${b.id}` : 'the digest'}: ${b.reason}); rows are shown as stored\n`,
    );
  } else if (result.unvouched) {
    process.stderr.write(
      `hearth: warning: entries ${result.unvouched.from}..${result.unvouched.to} are not vouched for by a signed digest (\`${hearthCommand()} audit verify\`)\n`,
    );
  }
}

/** What an owner accepts, printed before `hearth audit accept` writes its digest. */
function evidenceText(e: AcceptEvidence): string {
  const lines = [
    ...e.findings.map((f) => `found: ${f}`),
    `the last digest number known: #${e.highestSeq}${e.highestSeq ? '' : ' (none written yet)'}`,
    e.unvouched
      ? `not vouched for by any signed digest: ${e.unvouched.count} ${e.unvouched.count === 1 ? 'entry' : 'entries'}, ids ${e.unvouched.from}..${e.unvouched.to} (\`${hearthCommand()} audit show <id>\` shows each)`
      : `every entry up to id ${e.lastId} is vouched for by the digest`,
  ];
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------- registering

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('the audit log of actuator calls and refused attempts: tail, show, export, verify');

  withConfigOptions(audit.command('tail', { isDefault: true }))
    .description('the latest audit rows, oldest first (-f: keep printing new ones); what `hearth audit` alone does')
    .option('-n, --lines <n>', 'how many rows', '20')
    .option('-f, --follow', 'keep printing new rows (polls the database every 500 ms) until Ctrl+C')
    .option('--json', 'JSON: an array, or with -f one object per line (a row shown pending is printed again when it completes)')
    .option('--principal <id>', 'only this principal (exact id)')
    .option('--entity <id>', 'only this entity (exact id)')
    .addOption(new Option('--outcome <outcome>', 'only this outcome').choices([...OUTCOMES]))
    .option('--since <time>', 'only rows at or after this time (ISO 8601, or ago: 30m, 2h, 7d)')
    .action(async (flags: TailFlags) => {
      // -f polls the database from this process; a one-off tail asks the daemon when one runs.
      if (flags.follow) return withAudit(flags, (o) => follow(o, flags));
      const path = await databasePathOrExit(flags);
      const params = {
        lines: wholeNumber('-n', flags.lines, { min: 1, max: 10_000 }),
        principal: flags.principal,
        entity: flags.entity,
        outcome: flags.outcome,
        since: flags.since !== undefined ? parseTime('--since', flags.since).toISOString() : undefined,
      };
      const { auditTail } = await import('../daemon/methods/audit.js');
      const rows = await ask(path, flags, 'audit.tail', params, async (p) => {
        const o = await openAudit(flags);
        try {
          return auditTail(o.store, p);
        } finally {
          o.db.close();
        }
      });
      if (flags.json) return printJson(rows);
      const filtered = !!(flags.principal || flags.entity || flags.outcome || flags.since);
      if (!rows.length) return void process.stdout.write(`no audit rows${filtered ? ' match' : ' yet'} (${path})\n`);
      process.stdout.write(`${table([HEADER, ...rows.map(rowCells)])}\n`);
    });

  withConfigOptions(audit.command('show'))
    .description('every field of one audit row, hashes included')
    .argument('<id>', 'row id (the ID column of `hearth audit tail`)')
    .option('--json', 'print the row as JSON')
    .action((rawId: string, flags: CommonFlags & { json?: boolean }) =>
      withAudit(flags, (o) => {
        const id = wholeNumber('<id>', rawId, { min: 1 });
        const row = o.store.get(id);
        if (!row) {
          // Ids number entries: an outcome has an id of its own, and `tail` shows the call's.
          const entry = o.store.entryKind(id);
          if (entry?.kind === 'outcome' && entry.callId !== null)
            throw new CliFailure(`${id} is the outcome entry of call ${entry.callId}, not a call: ${hearthCommand()} audit show ${entry.callId}`, 1);
          const last = o.store.list({ order: 'desc', limit: 1 })[0];
          throw new CliFailure(`no audit row ${id}: ${last ? `the log has rows up to id ${last.id}` : 'the log is empty'}`, 1);
        }
        warnUnverified(o);
        process.stdout.write(flags.json ? `${JSON.stringify(row, null, 2)}\n` : `${showRow(row)}\n`);
      }),
    );

  withConfigOptions(audit.command('export'))
    .description('the whole log (or a time range) as JSON lines or CSV, streamed')
    .addOption(
      new Option('--format <format>', 'jsonl: one row per line, args as an object; csv: the table columns, args as JSON text')
        .choices(['jsonl', 'csv'])
        .default('jsonl'),
    )
    .option('--since <time>', 'rows at or after this time (ISO 8601, or ago: 30m, 2h, 7d)')
    .option('--until <time>', 'rows before this time')
    .option('--out <file>', 'write here instead of stdout')
    .action((flags: CommonFlags & { format: ExportFormat; since?: string; until?: string; out?: string }) =>
      withAudit(flags, (o) => {
        warnUnverified(o);
        return exportTo(o, flags);
      }),
    );

  withConfigOptions(audit.command('accept'))
    .description(
      'vouch for the log as it is, once checked: entries no Hearth signed over (after a crash), or a digest or sequence file found missing, unreadable or put back; prints the evidence, then writes a signed digest through them',
    )
    .option('--through <id>', 'the last entry to vouch for (default: the last one)')
    .action((flags: CommonFlags & { through?: string }) =>
      withAudit(flags, (o) => {
        if (!o.digestFile) throw new CliFailure('there is no digest to write: set audit.digest_file (and audit.key_file to sign it)', 2);
        const key = o.keyFile ? loadAuditKey(o.keyFile).key : undefined;
        const store = new SqliteAuditLog(o.db, {
          durability: 'connection',
          digestFile: o.digestFile,
          ...(key ? { key, sequenceFile: sequenceFileOf(o.keyFile!) } : {}),
        });
        const through = flags.through === undefined ? undefined : wholeNumber('--through', flags.through, { min: 1 });
        try {
          process.stdout.write(evidenceText(store.acceptEvidence()));
          const d = store.accept(through);
          process.stdout.write(`vouched for ${d.count} entries up to id ${d.lastId}: digest #${d.seq} written to ${o.digestFile}${key ? ', signed' : ''}\n`);
        } catch (err) {
          throw new CliFailure((err as Error).message.replace(/^audit: /, ''), 1);
        }
      }),
    );

  withConfigOptions(audit.command('verify'))
    .description(
      'check the hash chain row by row (and the digest file, which catches a cut-off tail); exit 1 naming the first broken row, a missing or older digest or sequence file, or entries no signed digest vouches for',
    )
    .option('--digest <file>', 'the digest file to check against (default: audit.digestFile from the config, if set)')
    .option('--key <file>', 'the audit key whose signature the digest must carry (default: audit.keyFile from the config, if set)')
    .option('--json', 'print the result as JSON')
    .action((flags: CommonFlags & { digest?: string; key?: string; json?: boolean }) =>
      withAudit(flags, (o) => {
        const digestFile = flags.digest ?? o.digestFile;
        if (flags.digest && !existsSync(flags.digest)) throw new CliFailure(`--digest ${flags.digest}: no such file`, 2);
        const keyFile = flags.key ?? o.keyFile;
        let key: Buffer | undefined;
        if (keyFile) {
          try {
            key = loadAuditKey(keyFile).key;
          } catch (err) {
            throw new CliFailure(`${flags.key ? '--key' : 'audit.keyFile'}: ${(err as Error).message.replace(/^audit\.keyFile: /, '')}`, 2);
          }
        }
        const result = verify(o.db, { ...(digestFile ? { digestFile } : {}), ...(key ? { key, sequenceFile: sequenceFileOf(keyFile!) } : {}) });
        const { ok, text } = verifyText(result, digestFile, !!key);
        if (flags.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
        else if (ok) process.stdout.write(`${text}\n`);
        else process.stderr.write(`hearth: ${text}\n`);
        process.exitCode = ok ? 0 : 1;
      }),
    );
}
