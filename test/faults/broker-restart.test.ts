// A broker restart under a whole running Hearth (bridge, simulator, SQLite),
// on aedes and on mosquitto: the bridge reconnects, subscribes to every topic
// again, rebuilds its state from the retained messages the broker replays,
// and the next actuator call goes end to end, with nothing from before the
// restart sent again. (The connection and the state cache alone are covered
// in test/devices/state-cache.test.ts; a call while the broker is down in
// test/tools/pipeline.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { brokerKinds } from '../helpers/brokers.js';
import { OWNER } from '../helpers/home.js';
import { clusterKinds } from '../helpers/cluster-brokers.js';
import { waitFor } from '../helpers/wait.js';
import { useHome } from '../helpers/use-home.js';

// And on the clustered brokers (#34): NATS (3 nodes) and RabbitMQ.
for (const { kind, start } of [...brokerKinds, ...clusterKinds]) {
  describe(`broker restart under a running Hearth on ${kind}`, () => {
    const home = useHome({ broker: start, travelMs: 50 });

    it('reconnects, resubscribes, rebuilds from retained messages, and acts again', async () => {
      const connection = home.hearth.bridge.connection;
      const cache = home.hearth.bridge.cache;
      assert.match((await home.hearth.tools.call('living_room_lamp', { action: 'turn_on' }, OWNER)).text!, /^confirmed/);
      const topics = [...connection.subscriptions].sort();
      assert.ok(topics.length >= 10);

      // Watch what the bridge does on its own client from here on.
      const subscribed: string[] = [];
      const client = connection.client;
      const subscribe = client.subscribe.bind(client) as (...a: unknown[]) => unknown;
      (client as unknown as { subscribe: (...a: unknown[]) => unknown }).subscribe = (t: unknown, ...rest: unknown[]) => {
        // A list of topics, one topic, or a map of topic -> options (as the connection sends them).
        subscribed.push(...(Array.isArray(t) ? (t as string[]) : typeof t === 'string' ? [t] : Object.keys(t as object)));
        return subscribe(t, ...rest);
      };
      const retained = new Set<string>();
      const onMessage = (topic: string, _p: Buffer, isRetained: boolean) => {
        if (isRetained) retained.add(topic);
      };
      connection.on('message', onMessage);
      const states: string[] = [];
      connection.on('state', (s) => states.push(s));

      await home.broker.restart();
      await waitFor('reconnected', () => states.includes('reconnecting') && connection.connected, 15_000);
      await waitFor('every topic subscribed again', () => topics.every((t) => subscribed.includes(t)), 5000);
      // The broker replays what it kept; the cache is rebuilt from it.
      const stateTopics = home.hearth.bridge.registry
        .entities()
        .map((e) => e.stateTopic)
        .filter((t): t is string => !!t);
      await waitFor('retained state replayed', () => stateTopics.every((t) => retained.has(t)), 10_000);
      // The simulator is back when its lamp is connected again (its retained "online" alone comes back with the broker).
      await waitFor('the simulator is back', () => home.sim.connected('living_room_lamp') && cache.get('living_room_lamp.lamp')?.available === true, 10_000);
      connection.off('message', onMessage);
      assert.equal(cache.get('living_room_lamp.lamp')!.value, 'on', 'the state survived, from the broker');

      // The whole pipeline works again.
      const sentBefore = home.commands().length;
      const off = await home.hearth.tools.call('living_room_lamp', { action: 'turn_off' }, OWNER);
      assert.match(off.text!, /^confirmed: .*: off;/);
      assert.equal(home.sim.state('living_room_lamp.lamp').value, 'off');
      await home.caughtUp();
      const lamp = home
        .commands()
        .slice(sentBefore)
        .filter((c) => c.topic === 'hearth-demo/living_room_lamp/set');
      assert.deepEqual(
        lamp.map((c) => c.payload),
        ['OFF'],
        'exactly the one command, nothing left over from before the restart',
      );
    });
  });
}
