// Finding 9 of issue 15: rate limits can be exceeded.
// 1. Across connections: many processes deciding at once against one
//    `max 5` rule must allow exactly 5 (count and record are one
//    BEGIN IMMEDIATE transaction). Here: worker threads, each with its own
//    better-sqlite3 connection to the same SQLite file, released together.
// 2. A call the built-in confirm rule escalates counts against the rate-limited
//    rule that allowed it: `max 1` on locks allows one unlock, not three.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { openDatabase } from '../../src/db/database.js';
import { SqlitePolicy } from '../../src/policy/engine.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

// Each worker opens its own connection, waits at the barrier, then decides `tries` times.
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  const { openDatabase } = await import(workerData.dbModule);
  const { SqlitePolicy } = await import(workerData.policyModule);
  const db = openDatabase(workerData.path);
  const policy = new SqlitePolicy(db);
  const flag = new Int32Array(workerData.barrier);
  Atomics.add(flag, 1, 1);
  Atomics.wait(flag, 0, 0);
  let allowed = 0;
  let errors = [];
  for (let i = 0; i < workerData.tries; i++) {
    try {
      const d = policy.decide({ principal: { id: 'cli:racer', roles: [] }, tool: 'kitchen_light', capability: 'actuator', action: 'turn_on',
        entityId: 'kitchen_light.light', kind: 'light', args: { action: 'turn_on' } });
      if (d.effect === 'allow') allowed++;
    } catch (err) { errors.push(String(err && err.message)); }
  }
  db.close();
  parentPort.postMessage({ allowed, errors });
})().catch((err) => parentPort.postMessage({ allowed: 0, errors: [String(err && err.stack)] }));
`;

describe('security: rate limits hold', { timeout: 120_000 }, () => {
  it('12 connections deciding at once against a max-5 rule allow exactly 5', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hearth-race-'));
    const path = join(dir, 'hearth.db');
    try {
      const db = openDatabase(path);
      const policy = new SqlitePolicy(db);
      const rule = policy.add({ subject: 'cli:racer', targetType: 'kind', target: 'light', action: 'actuate', effect: 'allow', maxCalls: 5, perSeconds: 3600 });
      db.close();
      const barrier = new SharedArrayBuffer(8);
      const flag = new Int32Array(barrier);
      const N = 12;
      const workers = Array.from(
        { length: N },
        () =>
          new Worker(WORKER, {
            eval: true,
            workerData: {
              path,
              barrier,
              tries: 4,
              dbModule: new URL('../../dist/db/database.js', import.meta.url).href,
              policyModule: new URL('../../dist/policy/engine.js', import.meta.url).href,
            },
          }),
      );
      try {
        const results = workers.map(
          (w) =>
            new Promise<{ allowed: number; errors: string[] }>((resolve, reject) => {
              w.once('message', resolve);
              w.once('error', reject);
            }),
        );
        await waitFor('every worker at the barrier', () => Atomics.load(flag, 1) === N, 60_000);
        Atomics.store(flag, 0, 1);
        Atomics.notify(flag, 0);
        const all = await Promise.all(results);
        assert.deepEqual(
          all.flatMap((r) => r.errors),
          [],
          'no worker failed (a busy database must wait, not fail)',
        );
        const allowed = all.reduce((n, r) => n + r.allowed, 0);
        assert.equal(allowed, 5, `a max-5 rule allowed ${allowed} calls`);
        const check = openDatabase(path);
        assert.equal(check.prepare('SELECT COUNT(*) FROM rule_hits WHERE rule_id = ?').pluck().get(rule.id), 5);
        check.close();
      } finally {
        await Promise.all(workers.map((w) => w.terminate()));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('an escalated call counts against the rule that allowed it', () => {
    const home = useHome({ ownerMayAct: false, travelMs: 50 });

    it('a max-1 rule on a lock allows one approved unlock, not three', async () => {
      const owner = { id: 'cli:owner', roles: ['owner'] };
      home.hearth.policy.add({
        subject: 'role:owner',
        targetType: 'kind',
        target: 'lock',
        action: 'actuate',
        effect: 'allow',
        maxCalls: 1,
        perSeconds: 3600,
        note: 'test: one lock action an hour',
      });
      const outcomes: string[] = [];
      for (let i = 0; i < 3; i++) {
        // The owner answers its own call (an owner may approve): the built-in confirm rule is satisfied.
        const r = await home.hearth.tools.call('front_door_lock', { action: 'unlock' }, owner, { approvalId: `owner said yes ${i}` });
        outcomes.push(r.text ?? '');
        if (!r.isError) {
          await waitFor('unlocked', () => home.hearth.bridge.cache.get('front_door.lock')?.value === 'unlocked', 5000);
        }
      }
      assert.match(outcomes[0], /^confirmed/, outcomes[0]);
      assert.match(outcomes[1], /rate limit: 1 calls per 3600 s/, outcomes[1]);
      assert.match(outcomes[2], /rate limit/, outcomes[2]);
      const sent = home.commands().filter((m) => m.topic === 'hearth-demo/front_door/lock/set');
      assert.equal(sent.length, 1, `published: ${JSON.stringify(sent)}`);
    });
  });
});
