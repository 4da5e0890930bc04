// The log-line budget for what the broker makes Hearth say about many things at once: a batch gets a few lines and
// one summary; a storm of batches gets at most the burst, then one line a second, and the next summary counts what
// was kept quiet. The clock is the test's own (no timing in tests).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstFew, LINE_BUDGET, LineBudget } from '../../src/util/line-budget.js';

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
