// Issue 42: a question the home's own records answer, spoken to a satellite (the real `wyoming` Python client
// over TCP, the offline model, the demo home on a real SQLite file): "how long has the living room lamp been
// on?" is answered from the recorded history, as handled, and nothing is actuated or audited.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { useHome } from '../helpers/use-home.js';
import { useWyoming } from './helpers.js';
import { pythonWyomingMissing } from './python-wyoming.js';

const missing = pythonWyomingMissing();

describe('a records question over Wyoming (Python wyoming client, offline model, demo home)', { skip: missing }, () => {
  const home = useHome();
  before(() => {
    home.hearth.policy.setRoles('voice:kitchen', ['owner']);
    const now = Date.now();
    home.hearth.history.write([
      { entityId: 'living_room_lamp.lamp', ts: now - 5 * 3_600_000, state: 'off' },
      { entityId: 'living_room_lamp.lamp', ts: now - 2 * 3_600_000, state: 'on' },
    ]);
    home.hearth.audit.record(
      {
        requestId: 'seed-anna-unlock',
        principal: 'chat:anna',
        session: null,
        runId: null,
        tool: 'control_locks',
        entityId: 'front_door.lock',
        action: 'unlock',
        args: { entity: 'front_door.lock', action: 'unlock' },
        decision: 'allow',
        ruleId: null,
        reason: 'seeded',
      },
      { outcome: 'confirmed' },
    );
  });
  const { py, wy } = useWyoming(home, [{ name: 'kitchen', address: '127.0.0.1', area: 'Kitchen' }]);

  it('"how long has the living room lamp been on?" is answered from the history, handled, and acts on nothing', async () => {
    const commands = home.commands().length;
    const audits = home.hearth.audit.digest().count;
    const c = await py.connect(wy.port);
    await c.transcript('how long has the living room lamp been on?');
    const handled = await c.event();
    assert.equal(handled.type, 'handled');
    assert.match(String(handled.data.text), /^The living room lamp has been on since \d{4}-\d\d-\d\d \d\d:\d\d UTC \(2 h ago\)\.$/);
    assert.equal(home.commands().length, commands, 'a question sends no command');
    assert.equal(home.hearth.audit.digest().count, audits, 'a question is no audited call');
  });

  it('"who unlocked the front door today?" is answered from the audit with who, by name, handled, and acts on nothing', async () => {
    const commands = home.commands().length;
    const audits = home.hearth.audit.digest().count;
    const c = await py.connect(wy.port);
    await c.transcript('who unlocked the front door today?');
    const handled = await c.event();
    assert.equal(handled.type, 'handled');
    assert.match(String(handled.data.text), /^Anna \(chat\) asked to unlock the front door lock .*: done and confirmed\.$/);
    await c.transcript("why can't I unlock the front door?");
    const why = await c.event();
    assert.equal(why.type, 'handled');
    assert.match(String(why.data.text), /^To unlock the front door lock: Kitchen \(voice satellite\) is /);
    assert.equal(home.commands().length, commands, 'a question sends no command');
    assert.equal(home.hearth.audit.digest().count, audits, 'a question is no audited call');
  });
});
