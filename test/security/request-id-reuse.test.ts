// Low item of issue 15: an idempotency key (request id) reused with a
// different tool or different arguments must be refused with a clear error,
// never answered `confirmed` from the earlier row without acting. A real demo
// home (aedes, simulator, SQLite file).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OWNER } from '../helpers/home.js';
import { useHome } from '../helpers/use-home.js';

describe('security: a reused request id with another call is refused', () => {
  const home = useHome({ travelMs: 50 });

  it('same tool and arguments: answered from the first call, not sent again; other arguments or tool: refused, nothing sent', async () => {
    const requestId = 'kitchen-retry-1';
    const first = await home.hearth.tools.call('kitchen_light', { action: 'turn_on' }, OWNER, { requestId });
    assert.match(first.text!, /^confirmed/, first.text);
    const sent = home.commands().length;

    // A true retry (keys in another order too): the same actuation, answered from the audit row.
    const retry = await home.hearth.tools.call('kitchen_light', { action: 'turn_on' }, OWNER, { requestId });
    assert.equal(retry.isError, undefined);
    assert.match(retry.text!, /already handled/);

    const otherArgs = await home.hearth.tools.call('kitchen_light', { action: 'turn_off' }, OWNER, { requestId });
    assert.equal(otherArgs.isError, true, otherArgs.text);
    assert.match(otherArgs.text!, /request id kitchen-retry-1 was already used for another call/);
    assert.match(otherArgs.text!, /kitchen_light/);

    const otherTool = await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER, { requestId });
    assert.equal(otherTool.isError, true, otherTool.text);
    assert.match(otherTool.text!, /already used for another call/);

    assert.equal(home.commands().length, sent, 'nothing was sent for the mismatched calls');
    // Each refused attempt has its own audit row (issue 27), naming the reused key.
    for (const [r, tool, action] of [
      [otherArgs, 'kitchen_light', 'turn_off'],
      [otherTool, 'living_room_lamp', 'turn_on'],
    ] as const) {
      const id = r.details?.auditId as number;
      assert.equal(typeof id, 'number', JSON.stringify(r));
      const row = home.hearth.audit.get(id)!;
      assert.deepEqual([row.tool, row.action, row.outcome], [tool, action, 'failed']);
      assert.match(row.error ?? '', /request id kitchen-retry-1 was already used for another call/);
    }
    assert.equal(home.hearth.bridge.cache.get('kitchen_light.light')?.value, 'on');
  });
});
