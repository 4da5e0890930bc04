// Issue 27, Wyoming: connections from addresses that are no satellite's never
// take a slot a satellite needs, and a connection that sends nothing is closed
// within seconds; at a shared address a client's words never choose its
// principal or area (only a satellite's secret does). Raw TCP from chosen
// loopback addresses (127.0.0.1 is a stranger, 127.0.0.2 a satellite), the
// demo home on aedes, a real SQLite file.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WyomingServer } from '../../src/wyoming/server.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';
import { WyomingTestClient } from '../voice/wyoming-client.js';

describe('security: Wyoming satellites', () => {
  const home = useHome();
  const clients: WyomingTestClient[] = [];
  const servers: WyomingServer[] = [];
  const connect = async (server: WyomingServer, from: string) => {
    const c = await WyomingTestClient.connect(server.port, '127.0.0.1', from);
    clients.push(c);
    return c;
  };

  home.cleanup(async () => {
    for (const c of clients) c.close();
    for (const s of servers) await s.close();
  });

  it('idle connections from an address that is no satellite cannot shut a satellite out, and are closed within seconds', async () => {
    const wy = await WyomingServer.start({
      hearth: home.hearth,
      port: 0,
      satellites: [{ name: 'kitchen', address: '127.0.0.2', area: 'Kitchen' }],
      log: home.logs.log.child({ part: 'wyoming' }),
    });
    servers.push(wy);
    home.hearth.policy.setRoles('voice:kitchen', ['owner']);
    // As many idle connections as the satellites' whole pool.
    const idle = await Promise.all(Array.from({ length: 64 }, () => connect(wy, '127.0.0.1')));
    await waitFor("all but the strangers' few slots are closed", () => idle.filter((c) => !c.closed).length <= 4, 10_000);
    assert.ok(home.logs.find(/too many connections from addresses that are no satellite/).length >= 1);

    const kitchen = await connect(wy, '127.0.0.2');
    kitchen.send('transcript', { text: 'is the living room lamp on?' });
    const answer = await kitchen.next();
    assert.equal(answer.type, 'handled', JSON.stringify(answer));

    // Connections that said nothing at all go within seconds (not the satellites' 5-minute idle time).
    for (const c of idle) await c.waitClosed(15_000);
    assert.equal(kitchen.closed, false, 'the satellite that spoke keeps its connection');
  });

  it("a client naming another satellite at its shared address speaks as the address's own; only the secret chooses", async () => {
    const secret = 'garage-satellite-secret-42';
    const wy = await WyomingServer.start({
      hearth: home.hearth,
      port: 0,
      satellites: [
        { name: 'porch', address: '127.0.0.1', area: 'Entrance' },
        { name: 'garage', address: '127.0.0.1', area: 'Garage', secret },
      ],
      log: home.logs.log.child({ part: 'wyoming' }),
    });
    servers.push(wy);
    // Anyone speaking from the garage may open its door without an approval.
    home.hearth.policy.add({
      subject: 'voice:*',
      targetType: 'device_class',
      target: 'garage',
      action: 'open',
      effect: 'allow',
      priority: 101,
      fromArea: 'Garage',
      note: 'test: the garage satellite opens its door',
    });
    const garage = () => home.hearth.bridge.cache.get('garage_door.door')?.value;
    assert.notEqual(garage(), 'open');
    const before = home.commands().length;

    const words = await connect(wy, '127.0.0.1');
    words.send('transcript', { text: 'open the garage door', context: { satellite: 'garage', conversation_id: 'x' } });
    const refused = await words.next();
    // The porch (no roles) is not even offered the garage's tool: nothing happens, as the garage.
    assert.match(String(refused.data.text), /cannot do that/i);
    assert.equal(home.commands().length, before, 'nothing was sent');
    assert.ok(!home.hearth.audit.list({ limit: 50, order: 'desc' }).some((r) => r.principal === 'voice:garage'));
    assert.ok(home.logs.find(/names another satellite without its secret/).length >= 1);

    const wrong = await connect(wy, '127.0.0.1');
    wrong.send('transcript', { text: 'open the garage door', context: { satellite: 'garage', satellite_secret: `${secret}!` } });
    assert.equal((await wrong.next()).type, 'not-handled');
    assert.equal(home.commands().length, before);

    const proven = await connect(wy, '127.0.0.1');
    proven.send('transcript', { text: 'open the garage door', context: { satellite: 'garage', satellite_secret: secret } });
    assert.equal((await proven.next()).type, 'handled');
    await waitFor('the garage door is open', () => garage() === 'open', 10_000);
    assert.equal(home.hearth.audit.list({ limit: 1, order: 'desc' })[0].principal, 'voice:garage');
    assert.ok(!JSON.stringify(home.logs.lines).includes(secret), 'the secret is never logged');
  });
});
