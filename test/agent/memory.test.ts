// Project memory and system prompts of the builtin engine, against a server
// speaking the OpenAI streaming format: a session's answers are recalled by a
// later session of the same principal (short, relevant, bounded), never with
// `ephemeral`; `systemPrompt` is sent byte for byte; the engine's own prompt
// names areas and kinds of device, not live values. And `hearth memory`
// (needs the built dist: `npx tsc -p tsconfig.json`).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BuiltinEngine } from '../../src/agent/builtin-engine.js';
import { MEMORY_LIMITS, MemoryStore, memorySection } from '../../src/agent/memory.js';
import { OpenAIProvider } from '../../src/agent/providers/openai.js';
import { homeSystemPrompt } from '../../src/agent/system-prompt.js';
import type { Turn } from '../../src/agent/types.js';
import { DEMO_DEVICES } from '../../src/bridge.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { Principal } from '../../src/tools/types.js';
import { HEARTH, runHearth } from '../helpers/cli.js';
import { startOpenAIServer, textChunks, type OpenAIServer } from '../helpers/openai-server.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-memory-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const ALICE: Principal = { id: 'chat:alice', roles: ['owner'] };
const BOB: Principal = { id: 'chat:bob', roles: ['owner'] };
const MEMORY_HEADER = 'What you remember from earlier conversations';

async function answer(turn: Turn): Promise<void> {
  for await (const _ of turn) void _;
  assert.deepEqual(await turn.result(), { stopReason: 'completed' });
}

describe('project memory and system prompts', () => {
  let server: OpenAIServer;
  let db: Db;
  let engine: BuiltinEngine;
  const entities = loadDeviceFiles([DEMO_DEVICES]).devices.flatMap((d) => d.entities);
  const ownPrompt = homeSystemPrompt(entities);
  const systemOf = (i: number) => server.requests[i].body.messages[0].content as string;

  before(async () => {
    server = await startOpenAIServer();
    db = openDatabase(join(dir, 'engine.db'));
    engine = await BuiltinEngine.start({
      provider: new OpenAIProvider({ baseUrl: server.url, apiKey: 'sk-test', model: 'test-model', timeoutMs: 5000 }),
      db,
      defaultSystemPrompt: () => homeSystemPrompt(entities),
    });
  });
  after(async () => {
    await engine?.close();
    await server?.close();
    db?.close();
  });

  it('the engine’s own prompt names the home’s areas and kinds of device, not live values', async () => {
    server.setScript([textChunks('Hello.')]);
    const at = server.requests.length;
    const session = await engine.createSession({ tools: [], principal: { id: 'chat:newcomer', roles: [] }, ephemeral: true });
    await answer(await session.prompt('hi'));
    const sent = systemOf(at);
    assert.equal(sent, ownPrompt);
    assert.match(sent, /The home has these areas and kinds of device:\n- "Entrance": cameras, locks, sirens\n/);
    assert.match(sent, /- "Living room": robot vacuums, sensors, switches$/);
    assert.ok(!/\d/.test(sent), 'no numbers: no temperatures, levels or positions');
    assert.ok(!/\b(locked|unlocked|closed|on|off)\b/i.test(sent.split('The home has')[1]), 'no states');
    assert.ok(!sent.includes(MEMORY_HEADER));
  });

  it('answers are recalled by a later session of the same principal, not by another principal', async () => {
    server.setScript([textChunks('Your parcel is behind the garage door, by the recycling bins.')]);
    const s1 = await engine.createSession({ tools: [], principal: ALICE });
    await answer(await s1.prompt('Where did the courier leave my parcel?'));
    const saved = engine.memory!.list({ principal: ALICE.id });
    assert.equal(saved.length, 1);
    assert.equal(saved[0].sessionId, s1.id);
    assert.equal(saved[0].prompt, 'Where did the courier leave my parcel?');
    assert.equal(saved[0].text, 'Your parcel is behind the garage door, by the recycling bins.');

    server.setScript([textChunks('Behind the garage door.'), textChunks('I do not know.')]);
    const at = server.requests.length;
    const s2 = await engine.createSession({ tools: [], principal: ALICE });
    await answer(await s2.prompt('remind me: where is my parcel?'));
    const sent = systemOf(at);
    assert.ok(sent.startsWith(`${ownPrompt}\n\n${MEMORY_HEADER}`), sent.slice(-400));
    assert.ok(sent.includes('you answered "Your parcel is behind the garage door, by the recycling bins."'));
    assert.ok(sent.includes('asked "Where did the courier leave my parcel?"'));
    assert.equal(s2.systemPrompt, sent);

    const bob = await engine.createSession({ tools: [], principal: BOB });
    await answer(await bob.prompt('where is my parcel?'));
    assert.equal(systemOf(at + 1), ownPrompt, 'another principal recalls nothing of alice’s');
  });

  it('ephemeral sessions neither save nor recall', async () => {
    server.setScript([textChunks('EPHEMERAL-ANSWER about the parcel.')]);
    const at = server.requests.length;
    const eph = await engine.createSession({ tools: [], principal: ALICE, ephemeral: true });
    await answer(await eph.prompt('where is my parcel?'));
    assert.equal(systemOf(at), ownPrompt, 'no memory in an ephemeral session');
    assert.ok(!engine.memory!.list().some((e) => e.text.includes('EPHEMERAL')));
    const rows = db.prepare("select count(*) n from memory where text like '%EPHEMERAL%' or prompt like '%EPHEMERAL%'").get() as { n: number };
    assert.equal(rows.n, 0);

    server.setScript([textChunks('ok')]);
    const later = await engine.createSession({ tools: [], principal: ALICE });
    await answer(await later.prompt('parcel?'));
    assert.ok(!systemOf(at + 1).includes('EPHEMERAL'), 'a later session never sees it');
  });

  it('systemPrompt replaces the whole system prompt, byte for byte; its answers are still saved', async () => {
    const custom = 'You control a robot arm.\r\n\tTabs, “quotes”, ünïcödé 🙂 and trailing spaces   \n\n';
    server.setScript([textChunks('Arm parked at the charging dock.')]);
    const at = server.requests.length;
    const session = await engine.createSession({ tools: [], principal: ALICE, systemPrompt: custom, builtins: false });
    await answer(await session.prompt('park the arm'));
    const request = server.requests[at];
    assert.equal(request.body.messages[0].role, 'system');
    assert.equal(request.body.messages[0].content, custom, 'exactly the given text: no memory, no home, nothing appended');
    assert.ok(request.rawBody.includes(JSON.stringify(custom).slice(1, -1)));
    assert.equal(session.systemPrompt, custom);
    assert.ok(
      engine.memory!.list({ principal: ALICE.id }).some((e) => e.text === 'Arm parked at the charging dock.'),
      'still saved to memory',
    );

    // A resumed session with its own prompt keeps it, still without memory.
    server.setScript([textChunks('Still parked.')]);
    const resumed = await engine.createSession({ tools: [], principal: ALICE, id: session.id });
    await answer(await resumed.prompt('and now?'));
    assert.equal(systemOf(at + 1), custom);
  });

  it('recall is short, relevant and bounded, and leaves out the session’s own answers', () => {
    const mem = new MemoryStore(openDatabase(':memory:'));
    const p = 'chat:carol';
    const old = mem.save(p, 's-old', 'what is the wifi password for guests?', 'The guest wifi password is on the fridge note.')!;
    for (let i = 0; i < 30; i++) mem.save(p, `s-${i}`, `question ${i}`, `answer number ${i} ${'x'.repeat(250)}`);
    mem.save(p, 's-long', 'long', 'y'.repeat(5000));
    assert.equal(mem.list({ principal: p, limit: 1 })[0].text.length, MEMORY_LIMITS.entryChars, 'answers are trimmed');

    const recalled = mem.recall(p, { query: 'Remind me of the guest wifi password' });
    assert.ok(recalled.length <= MEMORY_LIMITS.recallEntries);
    assert.ok(recalled.reduce((n, e) => n + e.text.length + e.prompt.length, 0) <= MEMORY_LIMITS.recallChars);
    assert.equal(recalled[0].id, old.id, 'the relevant old answer comes first (oldest first), ahead of newer ones');
    assert.ok(memorySection(recalled).length < 2000);

    const recent = mem.recall(p, {});
    assert.ok(!recent.some((e) => e.id === old.id), 'without a query, the most recent win');
    assert.ok(!mem.recall(p, { query: 'wifi', excludeSession: 's-old' }).some((e) => e.id === old.id), 'a session’s own answers are in its thread already');
    assert.deepEqual(mem.recall('chat:nobody', { query: 'wifi' }), []);
    assert.equal(memorySection([]), '');
  });

  it('hearth memory list | forget', { skip: !existsSync(HEARTH) && 'build first (npx tsc -p tsconfig.json)' }, async () => {
    const path = join(dir, 'cli.db');
    const seed = openDatabase(path);
    const mem = new MemoryStore(seed);
    const a = mem.save('cli:alice', 's1', 'where are my keys?', 'On the hallway hook.')!;
    mem.save('cli:alice', 's2', 'is the garage shut?', 'Yes, the garage door is closed.');
    mem.save('chat:bob', 's3', 'lights?', 'All lights are off.');
    seed.close();
    const db = ['--db', path];

    const listed = await runHearth(['memory', 'list', '--json', ...db], { cwd: dir });
    assert.equal(listed.code, 0, listed.stderr);
    const all = JSON.parse(listed.stdout) as Array<{ id: number; principal: string; text: string }>;
    assert.deepEqual(
      all.map((e) => e.text),
      ['All lights are off.', 'Yes, the garage door is closed.', 'On the hallway hook.'],
    );

    const table = await runHearth(['memory', 'list', '--principal', 'cli:alice', ...db], { cwd: dir });
    assert.match(table.stdout, /^ID\s+WHEN\s+PRINCIPAL/);
    assert.match(table.stdout, /On the hallway hook\./);
    assert.ok(!table.stdout.includes('All lights are off.'));

    const none = await runHearth(['memory', 'forget', ...db], { cwd: dir });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /exactly one of --principal <id>, --id <n> or --all/);

    const one = await runHearth(['memory', 'forget', '--id', String(a.id), ...db], { cwd: dir });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /forgot 1 entry/);
    const missing = await runHearth(['memory', 'forget', '--id', String(a.id), ...db], { cwd: dir });
    assert.equal(missing.code, 1);

    const bob = await runHearth(['memory', 'forget', '--principal', 'chat:bob', '--json', ...db], { cwd: dir });
    assert.deepEqual(JSON.parse(bob.stdout), { forgotten: 1 });
    const left = JSON.parse((await runHearth(['memory', 'list', '--json', ...db], { cwd: dir })).stdout) as Array<{ text: string }>;
    assert.deepEqual(
      left.map((e) => e.text),
      ['Yes, the garage door is closed.'],
    );

    const everything = await runHearth(['memory', 'forget', '--all', ...db], { cwd: dir });
    assert.match(everything.stdout, /forgot 1 entry/);
    const empty = await runHearth(['memory', 'list', ...db], { cwd: dir });
    assert.match(empty.stdout, /nothing remembered/);
  });
});
