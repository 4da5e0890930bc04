// The least work a bridge that keeps Hearth's trust model must do for an actuation, written with the raw libraries
// and none of Hearth's code. The benches measure it in the same run, beside the floor (the raw round trip
// plus one durable commit), so that what the pipeline adds can be told from what the trust model requires:
//
//   before anything is sent: the arguments checked against a compiled JSON schema (ajv: a bad argument is a failed
//     result, never a command); the policy decided on the rules as they are now (PRAGMA data_version, as another
//     process may have changed them, then a prepared SELECT of the rules for the principal); the pending row chained
//     (sha256 over the previous hash and the row's JSON) and committed with its fsync (synchronous=FULL, WAL)
//   after the echo: the outcome chained the same way and committed before the caller is answered (issue 40), without
//     an fsync of its own (the next pending row's fsync covers it)
//
// Hearth does more than this on every call (an approval hold, rate limits, the dangerous-words judgement of what would
// be sent, the topic gate, the state cache, per-device order, a request id never acted on twice, the readers' call
// index, listeners); none of it is here.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import Database from 'better-sqlite3';

export interface FloorCall {
  principal: string;
  tool: string;
  entity: string;
  args: Record<string, unknown>;
}

const ARGS_SCHEMA = {
  type: 'object',
  properties: { action: { enum: ['turn_on', 'turn_off'] } },
  required: ['action'],
  additionalProperties: false,
} as const;

export function requirementsFloor(dir: string, principal: string) {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'requirements-floor.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`
    CREATE TABLE rules (id INTEGER PRIMARY KEY, subject TEXT NOT NULL, target TEXT NOT NULL, action TEXT NOT NULL, effect TEXT NOT NULL);
    CREATE INDEX rules_subject ON rules (subject);
    CREATE TABLE log (id INTEGER PRIMARY KEY, at TEXT NOT NULL, call_id INTEGER, body TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
  `);
  const addRule = db.prepare('INSERT INTO rules (subject, target, action, effect) VALUES (?, ?, ?, ?)');
  addRule.run(principal, '*', 'actuate', 'allow');
  // Another principal's rules, so the lookup is a lookup.
  for (let i = 0; i < 20; i++) addRule.run(`chat:other-${i}`, '*', 'actuate', i % 2 ? 'deny' : 'allow');
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  const rulesOf = db.prepare('SELECT target, action, effect FROM rules WHERE subject = ?');
  const insert = db.prepare('INSERT INTO log (id, at, call_id, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)');
  // The outcome's connection: the same WAL, committed without an fsync.
  const second = new Database(file);
  second.pragma('synchronous = NORMAL');
  const insertOutcome = second.prepare('INSERT INTO log (id, at, call_id, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?)');
  const validate = new Ajv().compile(ARGS_SCHEMA);
  let tip = { id: 0, hash: '0'.repeat(64) };

  const chained = (callId: number | null, body: string) => {
    const at = new Date().toISOString();
    const id = tip.id + 1;
    const hash = createHash('sha256')
      .update(`${tip.hash}|${id}|${at}|${callId ?? ''}|${body}`)
      .digest('hex');
    const row = [id, at, callId, body, tip.hash, hash] as const;
    tip = { id, hash };
    return row;
  };

  /** The checks before anything is sent: throws on a bad argument or a refusal. `fresh`: read the rules' version first. */
  const judge = (call: FloorCall, fresh: boolean): string => {
    if (!validate(call.args)) throw new Error(`invalid arguments: ${JSON.stringify(validate.errors)}`);
    if (fresh) dataVersion.get();
    let effect = 'deny';
    for (const r of rulesOf.all(call.principal) as Array<{ target: string; action: string; effect: string }>) {
      if ((r.target === '*' || r.target === call.entity) && r.action === 'actuate') {
        if (r.effect === 'deny') throw new Error(`not allowed by a rule`);
        effect = r.effect;
      }
    }
    if (effect !== 'allow') throw new Error('no rule allows it');
    return JSON.stringify({ principal: call.principal, tool: call.tool, entity: call.entity, args: call.args, decision: effect });
  };
  const beginTx = db.transaction((bodies: string[]) => bodies.map((b) => insert.run(...chained(null, b)).lastInsertRowid as number));
  const outcomeTx = second.transaction((items: Array<{ id: number; echo: string }>) => {
    for (const o of items) insertOutcome.run(...chained(o.id, JSON.stringify({ outcome: 'confirmed', echo: o.echo })));
  });

  return {
    /** One call, up to its durable pending row: its id. */
    begin(call: FloorCall): number {
      return beginTx([judge(call, true)])[0]!;
    },
    /** Many calls at once (a scene): the rules' version read once, each call judged, their pending rows in one durable commit. */
    beginMany(calls: FloorCall[]): number[] {
      return beginTx(calls.map((c, i) => judge(c, i === 0)));
    },
    /** The outcomes, committed before the caller is answered. */
    finish(items: Array<{ id: number; echo: string }>): void {
      outcomeTx(items);
    },
    close(): void {
      second.close();
      db.close();
    },
  };
}

export type RequirementsFloor = ReturnType<typeof requirementsFloor>;
