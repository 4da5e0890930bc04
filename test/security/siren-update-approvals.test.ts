// #31 made a siren a security kind and a firmware install an actuator that needs a person (migration 0015):
// both are held for an approver through every door, and a principal that may act on them but may not approve
// cannot satisfy the hold: not through the HTTP device and tool calls, MCP, the OpenAI-compatible chat, a
// Node-RED device node, nor by naming itself as the approver or granting the approval. Nothing reaches the
// device until an owner grants it; then the same call goes through once. Real broker (aedes), the demo home's
// siren, a Home Assistant update entity, real SQLite, real HTTP server with MCP, the offline model.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { BridgeController } from '../../nodes/lib/bridge.js';
import { DeviceController } from '../../nodes/lib/device.js';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';
import { waitFor } from '../helpers/wait.js';

const KID = { id: 'http:kid', roles: ['family'] };

describe('security: a siren and a firmware install are held for an approver through every door', () => {
  const home = useHttpHome({ mcp: true, tokens: { owner: OWNER_AND_GUEST.owner, kid: { name: 'kid-phone', principal: KID.id, roles: KID.roles } } });
  const api = (method: string, path: string, who: 'owner' | 'kid', body?: unknown) =>
    home.api(method, path, { token: home.secret(who), body, strictJson: true });
  /** What reached the siren's and the router's command topics. */
  const sent = () => home.seen.filter((m) => m.topic === 'hearth-demo/siren/set' || m.topic === 'fw/install');
  let update: string;

  before(async () => {
    // Family may operate sirens and install updates: the built-in confirm rules still hold both for a person.
    for (const kind of ['siren', 'update'])
      home.hearth.policy.add({ subject: 'role:family', targetType: 'kind', target: kind, action: '*', effect: 'allow', note: `test: family operates ${kind}` });
    await home.device.publishAsync(
      'homeassistant/update/router/config',
      JSON.stringify({ name: 'Router firmware', unique_id: 'router_fw', state_topic: 'fw/state', command_topic: 'fw/install', payload_install: 'install' }),
      { retain: true, qos: 1 },
    );
    await home.device.publishAsync('fw/state', JSON.stringify({ installed_version: '1.0', latest_version: '1.1' }), { retain: true, qos: 1 });
    update = (await waitFor('the update entity', () => home.hearth.bridge.registry.entities().find((e) => e.kind === 'update'))).id;
  });

  it('the HTTP device and tool calls, MCP, the chat and a Node-RED node all answer "needs approval" and send nothing', async () => {
    const siren = await api('POST', '/api/devices/siren.siren/call', 'kid', { args: { action: 'turn_on' } });
    assert.equal(siren.status, 200, siren.text);
    assert.match(siren.json.text, /needs approval/);
    const fw = await api('POST', `/api/devices/${update}/call`, 'kid', { args: { action: 'install' } });
    assert.match(fw.json.text, /needs approval/, fw.text);
    const tool = await api('POST', '/api/tools/siren/call', 'kid', { args: { action: 'turn_off' } });
    assert.match(JSON.stringify(tool.json), /needs approval/, tool.text);

    const mcp = await home.mcpClient(home.secret('kid'), 'siren-test');
    const viaMcp = (await mcp.callTool({ name: 'siren', arguments: { action: 'turn_on' } })) as { isError?: boolean; content: Array<{ text?: string }> };
    assert.equal(viaMcp.isError, true);
    assert.match(viaMcp.content[0].text!, /needs approval/);

    const chat = await api('POST', '/v1/chat/completions', 'kid', { model: 'hearth', messages: [{ role: 'user', content: 'sound the siren' }] });
    assert.equal(chat.status, 200, chat.text);
    assert.match(chat.json.choices[0].message.content, /approv/i);

    const node = new DeviceController(new BridgeController(async () => home.hearth as never), { nodeId: 'kid-node', roles: KID.roles });
    await assert.rejects(node.call('siren', { action: 'turn_on' }), /needs approval/);
    node.close();

    assert.deepEqual(sent(), []);
  });

  it('naming itself the approver, or granting the approval, does not satisfy the hold; an owner does, once', async () => {
    const self = await home.hearth.tools.call('siren', { action: 'turn_on' }, KID, { approvalId: 'I say yes', approvedBy: KID });
    assert.equal(self.isError, true);
    assert.match(self.text!, /http:kid may not approve/);
    const installSelf = await home.hearth.tools.call(actuator(update), { action: 'install' }, KID, { approvalId: 'mine', approvedBy: KID });
    assert.match(installSelf.text!, /may not approve/);

    const pending = (await api('GET', '/api/approvals?status=pending', 'owner')).json as Array<{ id: string; principal: string; entityId: string }>;
    const held = pending.find((a) => a.principal === KID.id && a.entityId === update);
    assert.ok(held, JSON.stringify(pending));
    assert.equal((await api('POST', `/api/approvals/${held.id}`, 'kid', { decision: 'grant' })).status, 403);
    assert.deepEqual(sent(), []);

    // The router says it is installing once it is told to.
    home.device.on('message', (topic) => {
      if (topic === 'fw/install')
        void home.device.publishAsync('fw/state', JSON.stringify({ installed_version: '1.0', latest_version: '1.1', in_progress: true }));
    });
    await home.device.subscribeAsync('fw/install', { qos: 1 });
    assert.equal((await api('POST', `/api/approvals/${held.id}`, 'owner', { decision: 'grant' })).status, 200);
    const granted = await api('POST', `/api/devices/${update}/call`, 'kid', { args: { action: 'install' } });
    assert.doesNotMatch(granted.json.text, /needs approval/, granted.text);
    await waitFor('the install at the router', () => sent().some((m) => m.topic === 'fw/install'));
    assert.deepEqual(
      sent().map((m) => [m.topic, m.payload]),
      [['fw/install', 'install']],
    );
    const again = await api('POST', `/api/devices/${update}/call`, 'kid', { args: { action: 'install' } });
    assert.match(again.json.text, /needs approval/, 'an approval is for one call');
  });

  function actuator(entityId: string): string {
    return home.hearth.tools.all().find((t) => t.capability === 'actuator' && t.meta.entityIds.includes(entityId))!.name;
  }
});
