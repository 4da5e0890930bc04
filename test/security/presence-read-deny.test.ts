// Presence is private. A guest denied `read` on device trackers (#31's device_tracker kind, here from Home
// Assistant discovery) must not learn where Anna is, nor that Anna or Bob are tracked at all: not from
// get_state, find_entities or get_history, the HTTP API and its event stream, MCP resources, a Node-RED
// current-state node, nor from the offline model's answers to "is anyone home?", "is Bob home?" and "who is
// home?" (it knows the home itself, so it is told what the session's principal may read). The owner still gets
// them. Real broker (aedes), real SQLite, real HTTP server with MCP, the offline model through the chat door.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { BridgeController } from '../../nodes/lib/bridge.js';
import { currentState } from '../../nodes/lib/state.js';
import { collectEvents } from '../helpers/http-client.js';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';
import { waitFor } from '../helpers/wait.js';

const TRACKED = /anna|bob|office/i;

describe('security: a read deny on device trackers holds on every surface', () => {
  const home = useHttpHome({ mcp: true, tokens: OWNER_AND_GUEST, shape: 'grouped' });
  const guest = { id: 'http:guest', roles: ['guest'] };
  const trackers = () => home.hearth.bridge.registry.entities().filter((e) => e.kind === 'device_tracker');
  const chat = (who: 'owner' | 'guest', content: string) => home.chat(who, content);

  before(async () => {
    home.hearth.policy.add({
      subject: 'role:guest',
      targetType: 'kind',
      target: 'device_tracker',
      action: 'read',
      effect: 'deny',
      note: 'test: presence is private',
    });
    const retain = (topic: string, payload: string) => home.device.publishAsync(topic, payload, { retain: true, qos: 1 });
    await retain(
      'homeassistant/device_tracker/anna/config',
      JSON.stringify({ name: 'Anna', unique_id: 'anna', state_topic: 'trackers/anna', device: { identifiers: ['anna'], name: 'Anna' } }),
    );
    await retain('homeassistant/device_tracker/bob/config', JSON.stringify({ name: 'Bob', unique_id: 'bob', state_topic: 'trackers/bob' }));
    await retain('trackers/anna', 'Office');
    await retain('trackers/bob', 'home');
    await waitFor('both trackers with a state', () => trackers().length === 2 && trackers().every((e) => home.hearth.bridge.cache.get(e.id)?.value));
  });

  it('the offline model answers the owner, and tells the guest nothing of who is tracked or where', async () => {
    assert.match(await chat('owner', 'is Bob home?'), /bob is home/i);
    assert.equal(await chat('owner', 'who is home?'), 'Bob is home.');
    assert.equal(await chat('owner', 'where is Anna?'), 'Anna is at Office.');
    for (const question of ['is anyone home?', 'who is home?']) {
      const said = await chat('guest', question);
      assert.doesNotMatch(said, TRACKED, `${question} -> ${said}`);
    }
    // Asked by name, a tracker is as unknown as a name the home does not have.
    for (const name of ['Bob', 'Anna']) {
      for (const question of [`is ${name} home?`, `where is ${name}?`]) {
        const said = await chat('guest', question);
        const nobody = await chat('guest', question.replace(name, 'Zed'));
        assert.equal(said.replace(new RegExp(name, 'gi'), 'Zed'), nobody.replace(/zed/gi, 'Zed'), `${question} -> ${said}`);
        assert.doesNotMatch(said, /office|is home/i);
      }
    }
  });

  it('get_state, find_entities and get_history name no tracker to the guest', async () => {
    const [anna] = trackers();
    const state = await home.hearth.tools.call('get_state', {}, guest);
    assert.doesNotMatch(state.text!, TRACKED);
    const one = await home.hearth.tools.call('get_state', { entity: anna.id }, guest);
    assert.equal(one.isError, true);
    assert.match(one.text!, /unknown entity/);
    const found = await home.hearth.tools.call('find_entities', { query: 'anna' }, guest);
    assert.doesNotMatch(found.text ?? '', new RegExp(anna.id));
    const history = await home.hearth.tools.call('get_history', { entity: anna.id }, guest);
    assert.equal(history.isError, true);
    assert.doesNotMatch(history.text!, /office/i);
  });

  it('the HTTP API, its event stream, MCP resources and a Node-RED current-state node leave the trackers out', async () => {
    const [anna, bob] = trackers();
    const devices = await home.api('GET', '/api/devices', { token: home.secret('guest'), strictJson: true });
    assert.doesNotMatch(JSON.stringify(devices.json), TRACKED);
    const owners = await home.api('GET', '/api/devices', { token: home.secret('owner'), strictJson: true });
    assert.match(JSON.stringify(owners.json), /Office/);
    const history = await home.api('GET', `/api/history?entity=${anna.id}`, { token: home.secret('guest') });
    assert.ok(history.status === 403 || history.status === 404, `${history.status} ${history.text}`);
    assert.doesNotMatch(history.text, /office/i);
    assert.equal((await home.api('GET', `/api/history?entity=${anna.id}`, { token: home.secret('owner') })).status, 200);

    const open = (token: string) => fetch(`${home.server.url}/api/events`, { headers: { authorization: `Bearer ${token}` } });
    const guestEvents = collectEvents(await open(home.secret('guest')));
    const ownerEvents = collectEvents(await open(home.secret('owner')));
    await waitFor('both streams ready', () => [guestEvents, ownerEvents].every((s) => s.events.some((e) => e.event === 'ready')));
    await home.device.publishAsync('trackers/bob', 'Gym', { qos: 1 });
    await home.device.publishAsync('hearth-demo/living_room_lamp/state', home.hearth.bridge.cache.get('living_room_lamp.lamp')?.value === 'on' ? 'OFF' : 'ON');
    const seen = (s: typeof guestEvents, id: string) => s.events.some((e) => e.event === 'state' && e.data.id === id);
    await waitFor('the move and the lamp', () => seen(ownerEvents, bob.id) && seen(guestEvents, 'living_room_lamp.lamp'));
    assert.deepEqual(
      guestEvents.events.filter((e) => TRACKED.test(JSON.stringify(e.data)) || /gym/i.test(JSON.stringify(e.data))),
      [],
    );
    await guestEvents.cancel();
    await ownerEvents.cancel();

    const mcp = await home.mcpClient(home.secret('guest'), 'presence-test');
    const { resources } = await mcp.listResources();
    assert.deepEqual(
      resources.filter((r) => TRACKED.test(`${r.uri} ${r.name} ${r.description ?? ''}`)),
      [],
    );
    await assert.rejects(mcp.readResource({ uri: `hearth://entity/${anna.id}` }), /-32002: no entity .* that you may read/);

    const bridge = new BridgeController(async () => home.hearth as never);
    const feed = await bridge.stateFeed(guest);
    await assert.rejects(currentState(feed, anna.id), /no entity .* this node may read/);
    assert.doesNotMatch(JSON.stringify(await feed.snapshot()), TRACKED);
  });
});
