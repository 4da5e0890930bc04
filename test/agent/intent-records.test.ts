// Issue 42: questions the audit and the policy answer, through the OpenAI-compatible chat door with the offline
// model (a real HTTP server, real SQLite audit, real broker): an owner is answered with the principals' names and
// the outcomes in words; a guest is refused the audit question plainly; "why can't I unlock the front door?"
// answers with the rule that decides. No question commands a device or adds an audit row.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';

describe('intent model: audit and policy questions through the chat door', () => {
  const home = useHttpHome({ tokens: OWNER_AND_GUEST, shape: 'grouped' });
  const commands: string[] = [];
  const rows = () => home.hearth.audit.list({ limit: 10_000 }).length;
  let seeded = 0;
  const chat = (who: 'owner' | 'guest', content: string) => home.chat(who, content);

  before(async () => {
    const entry = (principal: string, entityId: string, action: string, tool: string, decision = 'allow') => ({
      requestId: `seed-${principal}-${entityId}-${action}`,
      principal,
      session: null,
      runId: null,
      tool,
      entityId,
      action,
      args: { entity: entityId, action },
      decision,
      ruleId: null,
      reason: 'seeded',
    });
    home.hearth.audit.record(entry('chat:anna', 'front_door.lock', 'unlock', 'control_locks'), { outcome: 'confirmed' });
    home.hearth.audit.record(entry('voice:kitchen', 'front_door.lock', 'unlock', 'control_locks', 'confirm'), { outcome: 'denied' });
    home.hearth.audit.record(entry('http:guest', 'garage_door.door', 'open', 'control_covers'), { outcome: 'unconfirmed' });
    home.hearth.policy.setRoles('chat:anna', ['adult']);
    await home.device.subscribeAsync('hearth-demo/#');
    home.device.on('message', (topic) => {
      if (/\/set$/.test(topic)) commands.push(topic);
    });
    seeded = rows();
  });

  it('"who unlocked the front door today?": the owner hears who, by name, and what came of it', async () => {
    const said = await chat('owner', 'who unlocked the front door today?');
    assert.match(said, /anna \(chat\) asked to unlock the front door lock .*: done and confirmed\./i);
    assert.match(said, /kitchen \(voice satellite\) asked to unlock the front door lock .*: held for approval\./i);
    assert.doesNotMatch(said, /garage/i);
  });

  it('"did anyone open the garage while I was away?": answered over today, saying so', async () => {
    const said = await chat('owner', 'did anyone open the garage while I was away?');
    assert.match(
      said,
      /^I can't tell when you were away, so here is all of today: guest \(token\) asked to open the garage door .*: sent but not confirmed\.$/i,
    );
  });

  it('"what did you do in the last hour?": every call of the hour', async () => {
    const said = await chat('owner', 'what did you do in the last hour?');
    for (const who of [/anna \(chat\)/i, /kitchen \(voice satellite\)/i, /guest \(token\)/i]) assert.match(said, who);
  });

  it('a guest is refused the audit question plainly, and told nothing of it', async () => {
    const said = await chat('guest', 'who unlocked the front door today?');
    assert.equal(said, 'Only someone allowed to read the audit can ask that: ask an owner.');
  });

  it('"why can\'t I unlock the front door?" says the rule that decides; an owner may ask for Anna', async () => {
    const mine = await chat('guest', "why can't I unlock the front door?");
    assert.match(mine, /^To unlock the front door lock: guest \(token\) is not allowed: rule #\d+ \(.+\)/i);
    const anna = await chat('owner', "why can't Anna unlock the front door?");
    assert.match(anna, /anna \(chat\) is not allowed: /i);
    const notMine = await chat('guest', "why can't Anna unlock the front door?");
    assert.equal(notMine, 'Only an owner can ask what the policy decides for someone else.');
  });

  it('no question commanded a device or added an audit row', () => {
    assert.deepEqual(commands, []);
    assert.equal(rows(), seeded);
  });
});
