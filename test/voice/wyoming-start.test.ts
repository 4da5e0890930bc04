// `hearth start` serves Wyoming when wyoming.port is set: the real command,
// its config file, and a Wyoming client written from the public spec (the
// `wyoming` Python package could not be installed here; see wyoming-client.ts).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { freePort } from '../helpers/brokers.js';
import { runHearth, spawnHearth, type Spawned } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { WyomingTestClient } from './wyoming-client.js';

const dir = mkdtempSync(join(tmpdir(), 'hearth-wyoming-start-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('hearth start with wyoming.port', () => {
  let bridge: Spawned;
  let wyomingPort: number;
  const clients: WyomingTestClient[] = [];
  const db = join(dir, 'h.db');

  before(async () => {
    const [brokerPort, httpPort] = [await freePort(), await freePort()];
    wyomingPort = await freePort();
    writeFileSync(
      join(dir, 'hearth.yaml'),
      [
        `database: { path: ${db} }`,
        `mqtt: { embedded: { port: ${brokerPort} } }`,
        `http: { port: ${httpPort} }`,
        'wyoming:',
        `  port: ${wyomingPort}`,
        '  satellites:',
        '    - { name: kitchen, address: 127.0.0.1, area: Kitchen }',
        '',
      ].join('\n'),
    );
    const roles = await runHearth(['policy', 'roles', 'voice:kitchen', 'owner'], { cwd: dir });
    assert.equal(roles.code, 0, roles.stderr);
    bridge = spawnHearth(['start'], { cwd: dir });
    await bridge.waitForOutput('Press Ctrl+C to stop.', 20_000);
  });
  after(async () => {
    for (const c of clients) c.close();
    await bridge?.stop();
  });

  it('says where Wyoming listens, answers describe, and a transcript switches the lamp as voice:kitchen', async () => {
    assert.match(bridge.stdout(), new RegExp(`wyoming +127\\.0\\.0\\.1:${wyomingPort} \\(voice satellites: voice:kitchen\\)`));
    const c = await WyomingTestClient.connect(wyomingPort);
    clients.push(c);
    c.send('describe');
    assert.equal(((await c.next('info')).data.handle as Array<{ name: string }>)[0].name, 'hearth');
    c.send('transcript', { text: 'turn on the living room lamp' });
    const handled = await c.next();
    assert.equal(handled.type, 'handled', JSON.stringify(handled));
    assert.match(String(handled.data.text), /lamp/i);
    const read = openDatabase(db, { readonly: true });
    try {
      const row = await waitFor(
        'the audit row',
        () =>
          read.prepare("SELECT principal, reason, outcome FROM audit WHERE tool = 'living_room_lamp' ORDER BY id DESC LIMIT 1").get() as
            | { principal: string; reason: string; outcome: string }
            | undefined,
      );
      assert.equal(row.principal, 'voice:kitchen');
      assert.match(row.reason, /\[from area "Kitchen"\]/);
    } finally {
      read.close();
    }
  });
});

describe('hearth start refuses a bad wyoming config', () => {
  it('names the field of a satellite listed twice', async () => {
    const cfg = join(dir, 'twice.yaml');
    const [brokerPort, httpPort, port] = [await freePort(), await freePort(), await freePort()];
    writeFileSync(
      cfg,
      [
        `database: { path: ${join(dir, 'twice.db')} }`,
        `mqtt: { embedded: { port: ${brokerPort} } }`,
        `http: { port: ${httpPort} }`,
        `wyoming: { port: ${port}, satellites: [{ name: kitchen, address: 127.0.0.1 }, { name: Kitchen, address: 127.0.0.2 }] }`,
        '',
      ].join('\n'),
    );
    const { code, stderr } = await runHearth(['start', '--config', cfg], { cwd: dir });
    assert.equal(code, 2, stderr);
    assert.match(stderr, /wyoming\.satellites\[1\]\.name/);
  });

  it('names the field of a satellite without an address', async () => {
    const cfg = join(dir, 'noaddr.yaml');
    writeFileSync(cfg, `database: { path: ${join(dir, 'noaddr.db')} }\nwyoming: { port: 10700, satellites: [{ name: kitchen }] }\n`);
    const { code, stderr } = await runHearth(['start', '--config', cfg], { cwd: dir });
    assert.equal(code, 2, stderr);
    assert.match(stderr, /wyoming\.satellites/);
    assert.match(stderr, /address/);
  });
});
