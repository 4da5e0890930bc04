// Low item of issue 15: arguments nested thousands of levels deep must be
// refused with a reason (not "Maximum call stack size exceeded") and the
// refusal audited, with a bounded summary of the arguments, not the arguments.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OWNER } from '../helpers/home.js';
import { useHome } from '../helpers/use-home.js';

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

describe('security: deeply nested or huge arguments are refused and audited', () => {
  const home = useHome({ travelMs: 50 });

  for (const depth of [3_000, 20_000]) {
    it(`${depth} levels deep: refused with a reason, audited with a bounded summary`, async () => {
      const before = home.commands().length;
      const r = await home.hearth.tools.call('kitchen_light', { action: 'turn_on', brightness: nested(depth) as never }, OWNER, { requestId: `deep-${depth}` });
      assert.equal(r.isError, true);
      assert.doesNotMatch(r.text!, /call stack/i);
      assert.match(r.text!, /invalid arguments: "brightness" is nested more than \d+ levels deep/);
      assert.equal(home.commands().length, before);
      const row = home.hearth.audit.byRequestId(`deep-${depth}`);
      assert.ok(row, 'the refusal is in the audit');
      assert.equal(row.outcome, 'failed');
      assert.match(row.error ?? '', /nested more than/);
      assert.ok(JSON.stringify(row.args).length < 2_000, `the audit stores a bounded summary, not ${JSON.stringify(row.args).length} characters`);
      assert.equal(home.hearth.audit.verify().ok, true);
    });
  }

  it('a huge argument (2 MB string) is refused by size, audited with a summary', async () => {
    const r = await home.hearth.tools.call('kitchen_light', { action: 'turn_on', effect: 'x'.repeat(2_000_000) as never }, OWNER, { requestId: 'huge-1' });
    assert.equal(r.isError, true);
    assert.match(r.text!, /invalid arguments: the arguments are larger than/);
    const row = home.hearth.audit.byRequestId('huge-1');
    assert.ok(row);
    assert.ok(JSON.stringify(row.args).length < 2_000);
  });
});
