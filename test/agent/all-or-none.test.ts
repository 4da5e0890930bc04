// Issue 28, "all or ask, never some": a plural is one request of a person, so its actions are all made or none.
// "lock all the doors" with one lock the policy refuses this person: neither lock is commanded, the refusal
// says which held it, and each attempt is in the audit. Without that rule, both lock. A real broker, the
// simulator behind the locks, a real SQLite file, the builtin engine with the offline model.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { AgentEvent } from '../../src/agent/types.js';
import type { Hearth } from '../../src/hearth.js';
import { startSimulator, type Simulator } from '../../src/simulator/simulator.js';
import { startAedes, type TestBroker } from '../helpers/brokers.js';
import { openHearth } from '../helpers/home.js';
import { logSink } from '../helpers/log-sink.js';
import { waitFor } from '../helpers/wait.js';

const HOME = new URL('../fixtures/homes/guesses.yaml', import.meta.url).pathname;
const ANNA = { id: 'chat:anna', roles: ['owner'] };

describe('one request, all or none', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-all-or-none-'));
  let broker: TestBroker;
  let hearth: Hearth;
  let sim: Simulator;
  let watcher: MqttClient;
  const commands: string[] = [];

  before(async () => {
    broker = await startAedes();
    const logs = logSink('warn');
    hearth = await openHearth(broker.url, dir, logs.log, { 'devices.paths': [HOME], 'mqtt.protocolVersion': '4' });
    sim = await startSimulator({ url: broker.url, devices: hearth.bridge.registry.devices(), log: logs.log.child({ part: 'sim' }) });
    await hearth.bridge.settle(5000);
    watcher = await mqtt.connectAsync(broker.url, { protocolVersion: 4 });
    watcher.on('message', (topic) => commands.push(topic));
    await watcher.subscribeAsync('g/+/set');
  });
  after(async () => {
    await watcher?.endAsync(true).catch(() => undefined);
    await sim?.close().catch(() => undefined);
    await hearth?.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function say(text: string): Promise<{ answer: string; results: string[] }> {
    const agent = await hearth.agent();
    const session = await agent.open({ principal: ANNA, permissions: 'host', ephemeral: true });
    const turn = await agent.prompt(session, text);
    let answer = '';
    const results: string[] = [];
    for await (const e of turn as AsyncIterable<AgentEvent>) {
      if (e.type === 'token') answer += e.text;
      if (e.type === 'tool_result') results.push(e.content);
    }
    await session.close();
    return { answer, results };
  }

  it('a plural with one member the policy refuses this person acts on none and says which', async () => {
    const rule = hearth.policy.add({
      subject: 'chat:anna',
      targetType: 'entity',
      target: 'back_door.lock',
      // Not `*`: that denies reading it too, and an entity a person may not read is not named to them at all.
      action: 'lock|unlock',
      effect: 'deny',
      note: 'not the back door',
    });
    try {
      const { answer } = await say('lock all the doors');
      assert.deepEqual(commands, [], 'no lock was commanded');
      assert.match(answer, /back door/i);
    } finally {
      hearth.policy.remove(rule.id);
    }
  });

  it('a plural with one member a confirm rule holds: that one waits for approval, the other is held back and audited; approved, the sentence locks both', async () => {
    const rule = hearth.policy.add({
      subject: 'chat:anna',
      targetType: 'entity',
      target: 'back_door.lock',
      action: 'lock',
      effect: 'confirm',
      note: 'ask first',
    });
    try {
      const first = hearth.audit.list({ order: 'desc', limit: 1 })[0]?.id ?? 0;
      const held = await say('lock all the doors');
      assert.deepEqual(commands, [], 'no lock was commanded');
      assert.ok(
        held.results.some((r) => /^needs approval/.test(r)),
        held.results.join('\n'),
      );
      assert.ok(
        held.results.some((r) => /held back with the rest of one request: back_door/.test(r)),
        held.results.join('\n'),
      );
      const rows = hearth.audit.list({ afterId: first, order: 'asc' });
      assert.deepEqual(
        rows.map((r) => [r.entityId, r.outcome, r.decision]),
        [
          ['back_door.lock', 'denied', 'confirm'],
          ['front_door.lock', 'denied', 'deny'],
        ],
      );
      assert.match(rows[1].error ?? rows[1].reason, /held back/);
      const approval = hearth.approvals.list({ status: 'pending' }).find((a) => a.principal === 'chat:anna');
      assert.ok(approval, 'the held lock waits for an approver');
      hearth.approvals.grant(approval!.id, 'cli:owner');
      const again = await say('lock all the doors');
      assert.equal(again.results.filter((r) => r.startsWith('confirmed')).length, 2, again.results.join('\n'));
      await waitFor('both lock commands on the broker', () => (commands.length === 2 ? commands : undefined));
      assert.deepEqual([...commands].sort(), ['g/back_lock/set', 'g/front_lock/set']);
    } finally {
      hearth.policy.remove(rule.id);
      commands.length = 0;
    }
  });

  it('with nothing refused or held, the sentence acts on both', async () => {
    const { results } = await say('lock all the doors');
    assert.equal(results.filter((r) => r.startsWith('confirmed')).length, 2, results.join('\n'));
    await waitFor('both lock commands on the broker', () => (commands.length >= 2 ? commands : undefined));
    assert.deepEqual([...commands].sort(), ['g/back_lock/set', 'g/front_lock/set']);
  });
});
