// Duplicate delivery: the same request id delivered more than once (a front
// door retrying, a queue redelivering) is one actuation and one audit row,
// also when the copies arrive at the same time, or for different tools.
// (A sequential retry is covered in test/tools/pipeline.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newCall } from '../../src/tools/pipeline.js';
import { normalizeResult } from '../../src/tools/tool-set.js';
import type { Principal, ToolResultObject } from '../../src/tools/types.js';
import { OWNER } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

describe('duplicate request ids', () => {
  // The garage takes a while (0 -> 30 % in about 180 ms), so copies can arrive while it moves.
  const home = useHome({ travelMs: 600 });
  const send = async (tool: string, args: Record<string, unknown>, requestId: string, principal: Principal = OWNER): Promise<ToolResultObject> => {
    const t = home.hearth.tools.get(tool)!;
    return normalizeResult(await t.handler(args, newCall(principal, t.name, { requestId })));
  };
  const rowsFor = (requestId: string) => home.hearth.audit.list({ limit: 10_000 }).filter((r) => r.requestId === requestId);
  const lampCommands = () => home.commands().filter((c) => c.topic === 'hearth-demo/living_room_lamp/set');

  it('ten copies at once: one command, one audit row, the others answered from it', async () => {
    const before = lampCommands().length;
    const results = await Promise.all(Array.from({ length: 10 }, () => send('living_room_lamp', { action: 'turn_on' }, 'dup-burst-1')));
    await home.caughtUp();
    assert.equal(lampCommands().length - before, 1, 'one command on the broker');
    assert.equal(rowsFor('dup-burst-1').length, 1, 'one audit row');
    const did = results.filter((r) => !/already handled/.test(r.text!));
    assert.equal(did.length, 1, 'one call did it');
    assert.match(did[0]!.text!, /^confirmed: "Living room lamp"/);
    for (const r of results.filter((x) => x !== did[0])) {
      assert.match(r.text!, /^(still running|confirmed): request dup-burst-1 was already handled \(audit #\d+\); it was not sent again\.$/);
      assert.equal((r.details as { duplicate?: boolean }).duplicate, true);
    }
  });

  it('the same id for two different tools at once: only one of them acts', async () => {
    const before = home.commands().length;
    const [a, b] = await Promise.all([
      send('living_room_lamp', { action: 'turn_off' }, 'dup-cross-1'),
      send('kitchen_light', { action: 'turn_on', brightness: 40 }, 'dup-cross-1'),
    ]);
    await home.caughtUp();
    assert.equal(home.commands().length - before, 1, 'one command in all');
    assert.equal(rowsFor('dup-cross-1').length, 1, 'one audit row');
    // The other is another call under the same id: refused as such, never answered from the first one's row.
    assert.equal([a, b].filter((r) => /^refused: request id dup-cross-1 was already used for another call/.test(r.text!)).length, 1);
  });

  it('a copy after a refusal stays refused, even from a principal who could act', async () => {
    const before = lampCommands().length;
    const guest = { id: 'chat:guest', roles: ['guest'] };
    const denied = await send('living_room_lamp', { action: 'turn_on' }, 'dup-denied-1', guest);
    assert.match(denied.text!, /^not allowed: /);
    const again = await send('living_room_lamp', { action: 'turn_on' }, 'dup-denied-1', OWNER);
    assert.equal(again.isError, true);
    // Another principal's copy is another call: refused, not answered from the guest's row.
    assert.match(again.text!, /^refused: request id dup-denied-1 was already used for another call/);
    const retry = await send('living_room_lamp', { action: 'turn_on' }, 'dup-denied-1', guest);
    assert.match(retry.text!, /^denied: request dup-denied-1 was already handled/);
    const alsoBad = await send('living_room_lamp', { action: 'explode' }, 'dup-denied-1', OWNER);
    assert.equal(alsoBad.isError, true);
    assert.equal(rowsFor('dup-denied-1').length, 1, 'one audit row: the refusal');
    await home.caughtUp();
    assert.equal(lampCommands().length, before, 'nothing published');
  });

  it('copies arriving while the first waits for its echo: one command, and none sent after it completes', async () => {
    const before = home.commands().filter((c) => c.topic.startsWith('hearth-demo/garage_door/')).length;
    const held = await home.hearth.tools.call('garage_door', { action: 'set_position', position: 30 }, OWNER);
    home.hearth.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test-person');
    const first = send('garage_door', { action: 'set_position', position: 30 }, 'dup-slow-1');
    await waitFor('the first call is waiting for its echo', () => rowsFor('dup-slow-1')[0]?.outcome === 'pending');
    const copies = await Promise.all([1, 2, 3].map(() => send('garage_door', { action: 'set_position', position: 30 }, 'dup-slow-1')));
    for (const c of copies) assert.match(c.text!, /^still running: request dup-slow-1 was already handled/);
    assert.match((await first).text!, /^confirmed: /);
    const late = await send('garage_door', { action: 'set_position', position: 30 }, 'dup-slow-1');
    assert.match(late.text!, /^confirmed: request dup-slow-1 was already handled/);
    await home.caughtUp();
    assert.equal(home.commands().filter((c) => c.topic.startsWith('hearth-demo/garage_door/')).length - before, 1, 'one command');
    assert.equal(rowsFor('dup-slow-1').length, 1);
  });
});
