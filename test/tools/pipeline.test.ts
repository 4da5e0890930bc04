// The handler pipeline end to end: real broker, simulated demo home, real SQLite file.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { newCall } from '../../src/tools/pipeline.js';
import { brokerKinds, type TestBroker } from '../helpers/brokers.js';
import { OWNER, startHome, type TestHome } from '../helpers/home.js';
import { waitFor } from '../helpers/wait.js';

for (const { kind, start } of brokerKinds) {
  describe(`pipeline on ${kind}`, () => {
    let broker: TestBroker;
    let home: TestHome;
    const call = (tool: string, args: Record<string, unknown> = {}, principal = OWNER) => home.hearth.tools.call(tool, args, principal);
    const rows = () => home.hearth.audit.list({ limit: 1000 });

    before(async () => {
      broker = await start();
      home = await startHome(broker);
    });
    after(async () => {
      await home?.close();
      await broker?.stop();
    });

    it('reads every sensor as text with value, unit, age and availability', async () => {
      const t = await call('living_room_temperature');
      assert.equal(t.isError, undefined);
      assert.match(
        t.text!,
        /^"Living room temperature" \(living_room_climate\.temperature, area "Living room"\): -?\d+(\.\d)? °C; updated (just now|\d+ s ago); online\.$/,
      );
      assert.match((await call('living_room_humidity')).text!, /\d+ %/);
      assert.match((await call('hallway_motion')).text!, /motion (on|off)/);
      assert.match((await call('thermostat_reading')).text!, /mode heat, target temperature 20\.5 °C, current temperature [\d.]+ °C, activity (heating|idle)/);
      const all = await call('get_state');
      assert.equal(all.text!.split('\n').length, 11, 'one line per demo entity');
      const kitchen = await call('get_state', { area: 'kitchen' });
      assert.match(kitchen.text!, /^"Kitchen light"/);
    });

    it('switches the lamp and says confirmed only after the echo; one audit row each', async () => {
      const before = rows().length;
      const on = await call('living_room_lamp', { action: 'turn_on' });
      assert.match(on.text!, /^confirmed: "Living room lamp" .*: on;/);
      assert.equal(home.hearth.bridge.cache.get('living_room_lamp.lamp')!.value, 'on');
      assert.equal(home.sim.state('living_room_lamp.lamp').value, 'on', 'the device really switched');
      const off = await call('living_room_lamp', { action: 'turn_off' });
      assert.match(off.text!, /^confirmed: .*: off;/);
      const mine = rows().slice(before);
      assert.deepEqual(
        mine.map((r) => [r.tool, r.action, r.outcome]),
        [
          ['living_room_lamp', 'turn_on', 'confirmed'],
          ['living_room_lamp', 'turn_off', 'confirmed'],
        ],
      );
      assert.equal(mine[0].principal, OWNER.id);
      assert.ok(typeof mine[0].latencyMs === 'number');
      assert.match(String(mine[0].echo), /"value":"on"/);
      assert.ok(!('details' in JSON.parse(JSON.stringify({ text: on.text }))));
      assert.equal((on.details as { published: unknown[] }).published.length, 1);
    });

    it("takes a light's brightness in percent and its white in kelvin, as people say them (issue 41)", async () => {
      const lastSent = () =>
        JSON.parse(
          home
            .commands()
            .filter((c) => c.topic === 'hearth-demo/kitchen_light/set')
            .at(-1)!.payload,
        );
      const spec = home.hearth.tools.get('kitchen_light')!.parameters.properties as Record<string, { minimum?: number; maximum?: number }>;
      assert.deepEqual(Object.keys(spec).sort(), ['action', 'brightness_pct', 'color', 'color_temp_kelvin'], 'the model is shown percent and kelvin');
      assert.deepEqual([spec.color_temp_kelvin.minimum, spec.color_temp_kelvin.maximum], [2200, 6500]);

      // A model's "80%" and 80 are the same call: the same command to the bulb, the same arguments in the audit.
      const written = await call('kitchen_light', { action: 'turn_on', brightness_pct: '80%' }, OWNER);
      assert.match(written.text!, /^confirmed: .*on, brightness 80% \(203 of 254\)/, written.text);
      const asWritten = lastSent();
      const number = await call('kitchen_light', { action: 'turn_on', brightness_pct: 80 });
      assert.match(number.text!, /^confirmed: /);
      assert.deepEqual(lastSent(), asWritten);
      assert.deepEqual(asWritten, { state: 'ON', brightness: 203 });
      const [a, b] = rows().slice(-2);
      assert.deepEqual(
        [a!.args, b!.args],
        [
          { action: 'turn_on', brightness_pct: 80 },
          { action: 'turn_on', brightness_pct: 80 },
        ],
      );

      // Kelvin in, mireds to the bulb; outside the light's range is refused in kelvin, naming the range.
      const warm = await call('kitchen_light', { action: 'turn_on', color_temp_kelvin: 2700 });
      assert.match(warm.text!, /^confirmed: .*colour temperature about 2700 K/, warm.text);
      assert.deepEqual(lastSent(), { state: 'ON', color_temp: 370 });
      const sent = home.commands().length;
      for (const wrong of [9000, '9000K', 370]) {
        const refused = await call('kitchen_light', { action: 'turn_on', color_temp_kelvin: wrong });
        assert.equal(refused.isError, true);
        assert.match(refused.text!, /^invalid arguments: "color_temp_kelvin" must be from 2200 to 6500 K for this light \(got \d+ K/, refused.text);
      }
      assert.equal(home.commands().length, sent, 'nothing sent for a kelvin out of range');

      // A flow's device-scale brightness (and color_temp, the earlier name) still works, and the audit keeps it as sent.
      const flow = { id: 'flow:motion', roles: ['owner'] };
      const fromFlow = await call('kitchen_light', { action: 'turn_on', brightness: 200, color_temp: 4000 }, flow);
      assert.match(fromFlow.text!, /^confirmed: .*brightness 79% \(200 of 254\)/, fromFlow.text);
      assert.deepEqual(lastSent(), { state: 'ON', brightness: 200, color_temp: 250 });
      assert.deepEqual(rows().at(-1)!.args, { action: 'turn_on', brightness: 200, color_temp: 4000 });
    });

    it('acts on every demo actuator: dimmer, thermostat, garage door, lock (with approval)', async () => {
      const dim = await call('kitchen_light', { action: 'turn_on', brightness: 77 });
      assert.match(dim.text!, /^confirmed: .*on, brightness 30% \(77 of 254\)/);
      assert.deepEqual(
        JSON.parse(
          home
            .commands()
            .filter((c) => c.topic === 'hearth-demo/kitchen_light/set')
            .at(-1)!.payload,
        ),
        { state: 'ON', brightness: 77 },
      );
      // The simulated bulb takes CIE xy, and reports the colour back.
      const blue = await call('kitchen_light', { action: 'turn_on', color: 'Blue' });
      assert.match(blue.text!, /^confirmed: .*on, brightness 30% \(77 of 254\), colour about blue \(x 0\.1\d+, y 0\.0\d+\)/, blue.text);
      assert.deepEqual(
        JSON.parse(
          home
            .commands()
            .filter((c) => c.topic === 'hearth-demo/kitchen_light/set')
            .at(-1)!.payload,
        ),
        { state: 'ON', color: { x: 0.15, y: 0.06 } },
      );

      const temp = await call('thermostat', { action: 'set_temperature', temperature: 22.5 });
      assert.match(temp.text!, /^confirmed: .*target temperature 22\.5 °C/);
      const mode = await call('thermostat', { action: 'set_mode', mode: 'cool' });
      assert.match(mode.text!, /^confirmed: .*mode cool/);

      // Opening a garage needs a person's approval, even for an owner.
      const held = await call('garage_door', { action: 'open' });
      assert.equal(held.isError, true);
      assert.match(held.text!, /^needs approval: rule #\d+ .*Approval ([0-9a-f]+) is waiting/);
      const approvalId = (held.details as { approvalId: string }).approvalId;
      assert.ok(!home.commands().some((c) => c.topic.startsWith('hearth-demo/garage_door')), 'nothing sent while held');
      assert.equal(home.hearth.approvals.grant(approvalId, 'cli:test-person'), true);
      const open = await call('garage_door', { action: 'open' });
      assert.match(open.text!, /^confirmed: "Garage door" .*: open, position 100%/);
      const again = await call('garage_door', { action: 'close' });
      assert.match(again.text!, /^confirmed: .*closed, position 0%/, 'closing needs no approval');

      const unlockHeld = await call('front_door_lock', { action: 'unlock' });
      assert.match(unlockHeld.text!, /^needs approval/);
      home.hearth.approvals.grant((unlockHeld.details as { approvalId: string }).approvalId, 'cli:test-person');
      assert.match((await call('front_door_lock', { action: 'unlock' })).text!, /^confirmed: .*unlocked/);
      // The approval was single use.
      assert.match((await call('front_door_lock', { action: 'unlock' })).text!, /^needs approval/);
      assert.match((await call('front_door_lock', { action: 'lock' })).text!, /^confirmed: .*locked/);
    });

    it('returns the camera frame as an image within the limits', async () => {
      const res = await call('front_door_camera');
      assert.equal(res.images?.length, 1);
      const img = res.images![0];
      assert.equal(img.mimeType, 'image/jpeg');
      const bytes = Buffer.from(img.url.replace(/^data:image\/jpeg;base64,/, ''), 'base64');
      assert.equal(bytes.length, img.bytes);
      assert.ok(bytes.length <= 5 * 1024 * 1024);
      const meta = await sharp(bytes).metadata();
      assert.equal(meta.format, 'jpeg');
      assert.match(res.text!, /^Latest frame from the camera "Front door camera" \(area "Entrance"\), taken .* ago\.$/);
    });

    it('refuses bad arguments with a reason the model can read, and publishes nothing', async () => {
      const sent = home.commands().length;
      const cases: Array<[string, Record<string, unknown>, RegExp]> = [
        ['kitchen_light', { action: 'turn_on', brightness_pct: 150 }, /"brightness_pct" must be <= 100 \(got 150\)/],
        // A flow's brightness on the light's own scale is taken, and held to that scale.
        ['kitchen_light', { action: 'turn_on', brightness: 999 }, /"brightness" must be between 0 and 254 for this device \(got 999\)/],
        [
          'kitchen_light',
          { action: 'turn_on', brightness: 'full' },
          /"brightness" takes a number on this light's own scale, 0 to 254; give a percentage as "brightness_pct"/,
        ],
        ['kitchen_light', { action: 'turn_on', brightness: 100, brightness_pct: 40 }, /give "brightness_pct" \(percent\) or "brightness"/],
        ['kitchen_light', { action: 'explode' }, /"action" must be one of "turn_on", "turn_off"/],
        ['kitchen_light', {}, /"action" is required/],
        ['kitchen_light', { action: 'turn_on', colour: 'red' }, /"colour" is not a known field/],
        ['thermostat', { action: 'set_temperature', temperature: '22' }, /"temperature" must be number/],
        ['thermostat', { action: 'set_temperature', temperature: 22.3 }, /"temperature" must be multiple of 0\.5/],
        ['thermostat', { action: 'set_mode' }, /set_mode needs "mode"/],
        ['garage_door', { action: 'set_position', position: 101 }, /"position" must be <= 100/],
        ['living_room_lamp', { action: 'turn_on', brightness_pct: 10 }, /"brightness_pct" is not a known field/],
        ['living_room_lamp', { action: 'turn_on', brightness: 10 }, /"brightness" is not a known field/],
        ['get_state', { entity: 'nope.nothing' }, /"entity" must be one of/],
      ];
      for (const [tool, args, reason] of cases) {
        const res = await call(tool, args);
        assert.equal(res.isError, true, `${tool} ${JSON.stringify(args)}`);
        assert.match(res.text!, reason, `${tool} ${JSON.stringify(args)}: ${res.text}`);
      }
      const unknown = await call('no_such_tool', {});
      assert.match(unknown.text!, /unknown tool "no_such_tool"/);
      await home.caughtUp();
      assert.equal(home.commands().length, sent, 'nothing published');
      const failed = rows().filter((r) => r.outcome === 'failed' && /invalid arguments/.test(String(r.error)));
      assert.ok(failed.length >= 8, 'each refused actuation is in the audit log');
    });

    it('denies a principal without a rule, before anything is sent', async () => {
      const sent = home.commands().length;
      const guest = { id: 'chat:visitor', roles: ['guest'] };
      const res = await call('living_room_lamp', { action: 'turn_on' }, guest);
      assert.equal(res.isError, true);
      assert.match(res.text!, /^not allowed: rule #2 .*denies/);
      assert.equal(home.commands().length, sent);
      const row = rows().at(-1)!;
      assert.deepEqual([row.principal, row.outcome, row.decision, row.ruleId], ['chat:visitor', 'denied', 'deny', 2]);
      // Reads stay open to everyone.
      assert.match((await call('living_room_temperature', {}, guest)).text!, /°C/);
    });

    it('keeps calls to one device in order and runs different devices in parallel', async () => {
      const before = home.commands().length;
      const actions = ['turn_on', 'turn_off', 'turn_on', 'turn_off', 'turn_on', 'turn_off', 'turn_on', 'turn_off'];
      const results = await Promise.all([...actions.map((action) => call('living_room_lamp', { action })), call('kitchen_light', { action: 'turn_off' })]);
      for (const r of results) assert.match(r.text!, /^confirmed/);
      const lamp = home
        .commands()
        .slice(before)
        .filter((c) => c.topic === 'hearth-demo/living_room_lamp/set');
      assert.deepEqual(
        lamp.map((c) => c.payload),
        actions.map((a) => (a === 'turn_on' ? 'ON' : 'OFF')),
      );
      // Each lamp command waited for the previous echo: a state message sits between two commands.
      const seq = home.seen.filter((m) => m.topic.startsWith('hearth-demo/living_room_lamp/'));
      const setIdx = seq
        .map((m, i) => (m.topic.endsWith('/set') ? i : -1))
        .filter((i) => i >= 0)
        .slice(-actions.length);
      for (let i = 1; i < setIdx.length; i++) {
        assert.ok(
          seq.slice(setIdx[i - 1], setIdx[i]).some((m) => m.topic.endsWith('/state')),
          'echo before the next command',
        );
      }
    });

    it('a retried request id is one actuation and one audit row', async () => {
      const tool = home.hearth.tools.get('living_room_lamp')!;
      const ctx = newCall(OWNER, tool.name, { requestId: 'fixed-request-1' });
      const first = await tool.handler({ action: 'turn_on' }, ctx);
      const second = await tool.handler({ action: 'turn_on' }, { ...ctx, signal: new AbortController().signal });
      assert.match(JSON.stringify(first), /confirmed/);
      assert.match(JSON.stringify(second), /already handled/);
      assert.equal(rows().filter((r) => r.requestId === 'fixed-request-1').length, 1);
    });

    it('cancellation mid-wait: the result says so, the row is interrupted, nothing is undone', async () => {
      const tool = home.hearth.tools.get('garage_door')!;
      const held = await home.hearth.tools.call('garage_door', { action: 'set_position', position: 50 }, OWNER);
      home.hearth.approvals.grant((held.details as { approvalId: string }).approvalId, 'cli:test-person');
      const ac = new AbortController();
      const pending = tool.handler({ action: 'set_position', position: 50 }, newCall(OWNER, tool.name, { signal: ac.signal, requestId: 'cancel-me' }));
      await waitFor('garage command sent', () => home.commands().some((c) => c.topic === 'hearth-demo/garage_door/position/set' && c.payload === '50'));
      ac.abort();
      const res = await pending;
      assert.equal((res as { isError: boolean }).isError, true);
      assert.match((res as { text: string }).text, /^cancelled while waiting for "Garage door" to confirm; the command had already been sent/);
      assert.equal(rows().find((r) => r.requestId === 'cancel-me')!.outcome, 'interrupted');
      await waitFor('garage still reached 50', () => home.sim.state('garage_door.door').position === 50, 5000);
    });

    it('fails at once for a device that is offline, and sends nothing', async () => {
      await home.sim.stopDevice('living_room_lamp');
      await waitFor('lamp offline', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.available === false);
      const sent = home.commands().length;
      const res = await call('living_room_lamp', { action: 'turn_on' });
      assert.equal(res.isError, true);
      assert.match(res.text!, /^failed: "Living room lamp" is offline/);
      assert.match((await call('living_room_lamp', { action: 'turn_on' })).text!, /offline/);
      assert.equal(home.commands().length, sent);
      assert.equal(rows().at(-1)!.outcome, 'not_sent', 'nothing left this process');
      await home.sim.startDevice('living_room_lamp');
      await waitFor('lamp online', () => home.hearth.bridge.cache.get('living_room_lamp.lamp')?.available === true);
    });

    it('broker killed mid-call: an unconfirmed result, not a hang; broker down: fails at once, nothing sent later', async () => {
      // The garage takes a while to close: the broker dies while the bridge waits for it.
      const sent = home.commands().length;
      const closing = call('garage_door', { action: 'close' });
      await waitFor('close command sent', () =>
        home
          .commands()
          .slice(sent)
          .some((c) => c.topic === 'hearth-demo/garage_door/set'),
      );
      await broker.stop();
      const res = await closing;
      // The command had left: what the door did is not known, so the result and the audit say unconfirmed.
      assert.notEqual(res.isError, true);
      // mosquitto publishes the simulator's last will as it shuts down; aedes just drops the connection.
      assert.match(res.text!, /^unconfirmed: sent close to "Garage door", then (lost the connection to the MQTT broker|it reported offline)/);
      assert.equal(rows().at(-1)!.outcome, 'unconfirmed');
      await waitFor('bridge sees the outage', () => !home.hearth.bridge.connection.connected);
      // Answered while the broker is still down (it starts again only after): the call does not wait for it.
      const down = await call('living_room_lamp', { action: 'turn_off' });
      assert.match(down.text!, /^failed: the MQTT broker is not connected; nothing was sent/);
      assert.equal(rows().at(-1)!.outcome, 'not_sent');
      broker = await start({ port: broker.port });
      await home.hearth.bridge.connection.waitConnected(10_000);
      const seenBefore = home.seen.length;
      await home.caughtUp();
      assert.ok(!home.seen.slice(seenBefore).some((m) => m.topic === 'hearth-demo/living_room_lamp/set'), 'the refused command never arrives');
    });
  });
}
