// The speaker's area: a token carries one (`hearth token create ... --area`),
// the session passes it to the model (an LLM gets it in its system prompt: a
// fake OpenAI server on the wire shows what it was sent), every tool call and
// audit row carries it, and a `--from-area` rule matches only calls from that
// area. The CLI is the built one (dist/), on the same SQLite file as the
// running Hearth, as a person would use it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { join } from 'node:path';
import { runHearth } from '../helpers/cli.js';
import { textChunks, toolCallChunks } from '../helpers/openai-server.js';
import { waitFor } from '../helpers/wait.js';
import { useHttpHome } from '../helpers/http-home.js';
import { chatClient } from '../helpers/openai-client.js';
import { useModel, agentOnModel } from '../helpers/use-model.js';

const ext = (message: unknown) => (message as { hearth: any }).hearth;

describe('speaker area: tokens, --from-area rules, the model context', () => {
  // Each home gets a broker of its own (useHome starts one): two demo simulators on one broker share the devices' topics.
  describe('--from-area (offline model, CLI-made tokens and rule)', () => {
    // No owner-acts rule: the only thing letting anyone open the garage is the --from-area rule below.
    const home = useHttpHome({ ownerMayAct: false });
    const cli = (...args: string[]) =>
      runHearth([...args, '--db', join(home.dir, 'hearth.db'), '--no-demo', '--devices', join(home.dir, 'devices')], { cwd: home.dir });

    async function tokenFor(name: string, area: string): Promise<string> {
      const made = await cli('token', 'create', name, '--principal', `http:${name}`, '--role', 'family', '--area', area, '--json');
      assert.equal(made.code, 0, made.stderr);
      const info = JSON.parse(made.stdout);
      assert.equal(info.area, area);
      return info.secret;
    }

    it('token create --area stores the area; a bad area is refused naming it', async () => {
      const bad = await cli('token', 'create', 'weird', '--area', '<script>');
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /area "<script>": an area name has/);
      const listed = await cli('token', 'list');
      assert.equal(listed.code, 0, listed.stderr);
      assert.doesNotMatch(listed.stdout, /weird/);
    });

    it('the garage opens from the hallway and not from the kitchen; the audit rows say where each call came from', async () => {
      const hallway = await tokenFor('hall-tablet', 'Hallway');
      const kitchen = await tokenFor('kitchen-tablet', 'Kitchen');
      const added = await cli(
        'policy',
        'allow',
        'role:family',
        '--device-class',
        'garage',
        '--action',
        'open|close',
        '--priority',
        '101',
        '--from-area',
        'Hallway',
      );
      assert.equal(added.code, 0, added.stderr);
      assert.match(added.stdout, /from area Hallway/);
      const listed = await cli('policy', 'list');
      assert.match(listed.stdout, /from Hallway/);
      const testHall = await cli('policy', 'test', 'http:hall-tablet', 'garage_door', '{"action":"open"}', '--from-area', 'Hallway', '--json');
      assert.equal(testHall.code, 0, testHall.stderr);
      assert.equal(JSON.parse(testHall.stdout).decision.effect, 'allow');
      const testKitchen = await cli('policy', 'test', 'http:kitchen-tablet', 'garage_door', '{"action":"open"}', '--from-area', 'Kitchen');
      assert.match(testKitchen.stdout, /^deny:/);
      assert.match(testKitchen.stdout, /the call comes from area Kitchen, not Hallway/);
      const badRule = await cli('policy', 'allow', 'role:family', '--kind', 'light', '--from-area', '');
      assert.equal(badRule.code, 2);
      assert.match(badRule.stderr, /--from-area/);

      const ask = (token: string, text: string) =>
        chatClient(home.server.url, token).chat.completions.create({
          model: 'hearth',
          messages: [{ role: 'user', content: text }],
        });

      // From the kitchen the policy can never allow it, so the garage is not among the kitchen tablet's tools at all.
      const offered = (area: string) => home.hearth.tools.forPrincipal({ id: 'http:x', roles: ['family'], area }).map((t) => t.name);
      assert.ok(offered('Hallway').includes('garage_door'));
      assert.ok(!offered('Kitchen').includes('garage_door'));
      const commandsBefore = home.commands().length;
      const fromKitchen = await ask(kitchen, 'open the garage door');
      const k = ext(fromKitchen.choices[0].message);
      assert.deepEqual(k.tool_calls, [], JSON.stringify(k));
      assert.equal(k.area, 'Kitchen');
      assert.equal(home.commands().length, commandsBefore, 'nothing was sent from the kitchen');
      assert.equal(home.hearth.bridge.cache.get('garage_door.door')?.value, 'closed');

      const fromHallway = await ask(hallway, 'open the garage door');
      const h = ext(fromHallway.choices[0].message);
      assert.equal(h.tool_calls[0].is_error, false, JSON.stringify(h));
      await waitFor('the garage door is open', () => home.hearth.bridge.cache.get('garage_door.door')?.value === 'open', 10_000);
      const hRow = home.hearth.audit.get(h.audit_ids[0])!;
      assert.equal(hRow.principal, 'http:hall-tablet');
      assert.equal(hRow.decision, 'allow');
      assert.match(hRow.reason, /from area Hallway/);
      assert.match(hRow.reason, /\[from area "Hallway"\]/);
    });
  });

  describe('an LLM gets the area in its context (fake OpenAI server on the wire)', () => {
    const model = useModel();
    const home = useHttpHome({ settings: () => agentOnModel(model.url) });

    it('"turn on the lights in here" from a kitchen token: the model is told the area, its call carries it to the audit', async () => {
      const token = home.hearth.tokens.create('kitchen-wall', 'http:kitchen-wall', 'Kitchen').secret;
      home.hearth.policy.setRoles('http:kitchen-wall', ['owner']);
      const want = home.hearth.bridge.cache.get('kitchen_light.light')?.value === 'on' ? 'off' : 'on';
      model.setScript([toolCallChunks([{ name: 'host__kitchen_light', arguments: { action: `turn_${want}` } }]), textChunks(`The kitchen light is ${want}.`)]);
      const before = home.commands().length;
      const completion = await chatClient(home.server.url, token).chat.completions.create({
        model: 'hearth',
        messages: [{ role: 'user', content: `turn ${want} the lights in here` }],
      });
      assert.equal(completion.choices[0].message.content, `The kitchen light is ${want}.`);
      const system = model.requests[0].body.messages[0];
      assert.equal(system.role, 'system');
      assert.match(system.content, /speaking from the area "Kitchen": "here" and "in here" mean that area/);
      assert.equal(model.requests[0].body.messages.at(-1).content, `turn ${want} the lights in here`);
      await waitFor('a command to the kitchen light', () =>
        home
          .commands()
          .slice(before)
          .find((c) => c.topic === 'hearth-demo/kitchen_light/set'),
      );
      await waitFor(`the kitchen light is ${want}`, () => home.hearth.bridge.cache.get('kitchen_light.light')?.value === want);
      const row = home.hearth.audit.get(ext(completion.choices[0].message).audit_ids[0])!;
      assert.equal(row.principal, 'http:kitchen-wall');
      assert.match(row.reason, /\[from area "Kitchen"\]/);
    });

    it('a token without an area: no area line in the model context', async () => {
      const token = home.hearth.tokens.create('no-area', 'http:no-area').secret;
      home.hearth.policy.setRoles('http:no-area', ['owner']);
      model.setScript([textChunks('Hello.')]);
      const n = model.requests.length;
      await chatClient(home.server.url, token).chat.completions.create({
        model: 'hearth',
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.doesNotMatch(model.requests[n].body.messages[0].content, /speaking from the area/);
    });
  });
});
