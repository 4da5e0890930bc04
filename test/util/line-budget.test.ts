// The log-line budget for what the broker makes Hearth say about many things at once: a batch gets a few lines and
// one summary; a storm of batches gets at most the burst, then one line a second, and the next summary counts what
// was kept quiet. The clock is the test's own (no timing in tests).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstFew, LINE_BUDGET, LineBudget, LineTrickle, type Quieted, quietKeys } from '../../src/util/line-budget.js';

describe('LineBudget', () => {
  const ids = (n: number, tag = 'd') => Array.from({ length: n }, (_, i) => `${tag}${i}`);

  it('a small batch gets a line per thing; a big one a few lines and one summary of the rest', () => {
    const budget = new LineBudget({ now: () => 0 });
    const lines: string[] = [];
    budget.batch(
      ids(3),
      (t) => lines.push(t),
      () => lines.push('summary'),
    );
    assert.deepEqual(lines, ['d0', 'd1', 'd2']);
    lines.length = 0;
    let rest = 0;
    budget.batch(
      ids(5000),
      (t) => lines.push(t),
      (s) => {
        rest = s.rest.length;
        lines.push('summary');
      },
    );
    assert.equal(lines.length, LINE_BUDGET.each);
    assert.equal(lines.at(-1), 'summary');
    assert.equal(rest + LINE_BUDGET.each - 1, 5000);
  });

  it('a storm of batches writes at most the burst, then one line a second; the next summary says how many were not logged', () => {
    let now = 0;
    const budget = new LineBudget({ now: () => now });
    let lines = 0;
    let unlogged = 0;
    for (let i = 0; i < 1000; i++)
      budget.batch(
        ids(1000, `b${i}-`),
        () => lines++,
        () => lines++,
      );
    assert.equal(lines, LINE_BUDGET.burst);
    now += 1000;
    budget.batch(
      ids(2),
      () => lines++,
      (s) => {
        lines++;
        unlogged = s.unlogged;
      },
    );
    assert.equal(lines, LINE_BUDGET.burst + 1, 'one line a second');
    // Every thing of the 1,000 batches was in a line or counted: the burst's lines covered the first batches.
    assert.ok(unlogged > 990 * 1000, `${unlogged} counted as not logged`);
    now += 10_000;
    const after: string[] = [];
    budget.batch(
      ids(2),
      (t) => after.push(t),
      () => after.push('summary'),
    );
    assert.deepEqual(after, ['d0', 'd1'], 'quiet again: a line each');
  });

  it('names the first few', () => {
    assert.equal(firstFew(ids(3)), 'd0, d1, d2');
    assert.equal(firstFew(ids(12)), 'd0, d1, d2, d3, d4 and 7 more');
  });
});

describe('LineTrickle', () => {
  it('lines one at a time on invented keys: the burst, then one summary with the count and first keys when a token comes, then a line a second', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let now = 0;
    const lines: string[] = [];
    const summaries: Quieted[] = [];
    const trickle = new LineTrickle((q) => summaries.push(q), { burst: 3, perSecond: 1, now: () => now });
    for (let i = 0; i < 3000; i++) trickle.line(`topic/${i}`, () => lines.push(`topic/${i}`));
    assert.deepEqual(lines, ['topic/0', 'topic/1', 'topic/2']);
    assert.equal(summaries.length, 0, 'the summary waits for a token');
    now += 1000;
    t.mock.timers.tick(1000);
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]!.count, 2997);
    assert.equal(quietKeys(summaries[0]!), 'topic/3, topic/4, topic/5, topic/6, topic/7 and 2992 more');
    // Right after a summary the bucket is dry: the next is counted, and said a second later.
    trickle.line('topic/late', () => lines.push('topic/late'));
    assert.equal(lines.length, 3);
    now += 1000;
    t.mock.timers.tick(1000);
    assert.deepEqual(summaries[1], { count: 1, first: ['topic/late'] });
    // Quiet for long: lines of their own again, as many as the bucket holds.
    now += 10_000;
    trickle.line('topic/again', () => lines.push('topic/again'));
    assert.equal(lines.at(-1), 'topic/again');
    trickle.stop();
    assert.equal(summaries.length, 2, 'nothing waits: stopping says nothing');
  });

  it('stopping says what was kept quiet, at once', () => {
    const summaries: Quieted[] = [];
    const trickle = new LineTrickle((q) => summaries.push(q), { burst: 1, now: () => 0 });
    trickle.line('a', () => undefined);
    trickle.line('b', () => assert.fail('over the budget'));
    trickle.stop();
    assert.deepEqual(summaries, [{ count: 1, first: ['b'] }]);
  });
});
