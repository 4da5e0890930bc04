// The previews of a call (POST /api/policy/test, `hearth policy test`) judge it as the pipeline does: by what it
// would send. A number whose command template says UNLOCK is previewed as the unlock it is (a person approves it),
// and one whose payload nests too deep to judge is previewed as refused, as the real call is: before, both previews
// answered with the number's own rules (the CLI's did not look at payloads at all). Real broker (aedes), real SQLite
// file, real HTTP server, Home Assistant discovery.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { testPolicy } from '../../src/daemon/methods/policy.js';
import { OWNER_AND_GUEST, useHttpHome } from '../helpers/http-home.js';
import { waitFor } from '../helpers/wait.js';

describe('security: a call previewed is judged by what it would send', () => {
  const home = useHttpHome({ tokens: OWNER_AND_GUEST });
  const owner = (body: unknown) => home.api('POST', '/api/policy/test', { token: home.secret('owner'), timeoutMs: 10_000, body });

  before(async () => {
    const config = (id: string, template: string) =>
      JSON.stringify({ name: id, unique_id: id, command_topic: `t/${id}/set`, state_topic: `t/${id}/state`, command_template: template });
    await home.device.publishAsync('homeassistant/number/porch_keypad/config', config('Porch keypad', '{"state":"UNLOCK","value":{{ value }}}'), {
      retain: true,
      qos: 1,
    });
    await home.device.publishAsync('homeassistant/number/shed_keypad/config', config('Shed keypad', `{{ '[' * 70 }}{{ value }}{{ ']' * 70 }}`), {
      retain: true,
      qos: 1,
    });
    await waitFor('both keypads', () => ['porch_keypad', 'shed_keypad'].every((n) => home.hearth.tools.get(n)));
    // Numbers are allowed to the owner: only what they send can make them need a person, or be refused.
    home.hearth.policy.add({ subject: 'role:owner', targetType: 'kind', target: 'number', action: '*', effect: 'allow', priority: 50 });
  });

  it('POST /api/policy/test: the UNLOCK number needs a person, as an unlock; the unjudgeable one is refused, naming why', async () => {
    const unlock = await owner({ tool: 'porch_keypad', args: { value: 5 } });
    assert.equal(unlock.status, 200, JSON.stringify(unlock.json));
    assert.equal(unlock.json.action, 'unlock');
    assert.equal(unlock.json.decision.effect, 'confirm', JSON.stringify(unlock.json.decision));
    const tooLong = await owner({ tool: 'shed_keypad', args: { value: 5 } });
    assert.equal(tooLong.status, 200, JSON.stringify(tooLong.json));
    assert.equal(tooLong.json.decision.effect, 'deny');
    assert.match(tooLong.json.decision.reason, /nests deeper than 64 levels, too deep to judge for dangerous words/);
    // The real calls agree.
    assert.match((await home.hearth.tools.call('porch_keypad', { value: 5 }, { id: 'http:owner', roles: ['owner'] })).text!, /^needs approval/);
    assert.match((await home.hearth.tools.call('shed_keypad', { value: 5 }, { id: 'http:owner', roles: ['owner'] })).text!, /too deep to judge/);
  });

  it('`hearth policy test` (the daemon method): the same two answers, with a note saying why', () => {
    const unlock = testPolicy(home.hearth, { principal: 'cli:me', role: ['owner'], tool: 'porch_keypad', args: { value: 5 } });
    assert.equal(unlock.request.action, 'unlock');
    assert.equal(unlock.request.kind, 'lock');
    assert.equal(unlock.decision.effect, 'confirm');
    assert.ok(
      unlock.notes.some((n) => /UNLOCK/.test(n)),
      unlock.notes.join('; '),
    );
    const tooLong = testPolicy(home.hearth, { principal: 'cli:me', role: ['owner'], tool: 'shed_keypad', args: { value: 5 } });
    assert.equal(tooLong.decision.effect, 'deny');
    assert.match(tooLong.decision.reason, /too deep to judge/);
  });
});
