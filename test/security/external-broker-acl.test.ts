// Issue 27: on a broker Hearth does not run, `hearth broker acl` prints the rules that give the embedded
// broker's guarantee: only Hearth's user publishes on command topics; devices write what Hearth reads. The
// printed acl_file is loaded into a real mosquitto, and an outside client tries to unlock the front door.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { startMosquitto, type TestBroker } from '../helpers/brokers.js';
import { runHearth } from '../helpers/cli.js';
import { OWNER, startHome, type TestHome } from '../helpers/home.js';
import { findBin } from '../helpers/mosquitto-process.js';
import { waitFor } from '../helpers/wait.js';

const PASSWORD = 'hearth-acl-test-password';

describe('security: an external broker with the printed ACL lets only Hearth command a device', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-acl-'));
  let plain: TestBroker | undefined;
  let guarded: TestBroker | undefined;
  let home: TestHome | undefined;
  let acl = '';

  before(async () => {
    // The rules are printed against the home as Hearth sees it on a broker (here: the demo home's files).
    plain = await startMosquitto();
    const printed = await runHearth(
      ['broker', 'acl', '--mqtt-url', plain.url, '--set', 'mqtt.username=hearth', '--demo', '--db', join(dir, 'print.db'), '--wait', '500'],
      { cwd: dir },
    );
    assert.equal(printed.code, 0, printed.stderr);
    acl = printed.stdout;
    await plain.stop();
    writeFileSync(join(dir, 'acl'), acl);
    const passwords = join(dir, 'passwords');
    writeFileSync(passwords, '');
    execFileSync(findBin('mosquitto_passwd')!, ['-b', passwords, 'hearth', PASSWORD]);
    guarded = await startMosquitto({ config: [`acl_file ${join(dir, 'acl')}`, `password_file ${passwords}`] });
    home = await startHome(guarded, { extraSettings: { 'mqtt.username': 'hearth', 'mqtt.password': PASSWORD } });
  });
  after(async () => {
    await home?.close();
    await guarded?.stop();
    await plain?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("names the command topics only under Hearth's user; devices get their state topics", () => {
    const [everyone, hearth] = acl.split(/^user hearth$/m);
    assert.ok(hearth, acl);
    assert.match(hearth, /^topic readwrite #$/m);
    assert.match(everyone, /^topic write hearth-demo\/front_door\/lock$/m, 'the lock reports its state');
    assert.doesNotMatch(everyone, /front_door\/lock\/set/, "nobody but Hearth writes the lock's command topic");
    assert.doesNotMatch(everyone, /^topic (write|readwrite) #$/m);
  });

  it('an anonymous client cannot unlock the door; the lock still reports; Hearth still locks it', async () => {
    const h = home!;
    assert.equal(h.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
    const outsider: MqttClient = await mqtt.connectAsync(guarded!.url, { protocolVersion: 4, reconnectPeriod: 0 });
    try {
      await outsider.publishAsync('hearth-demo/front_door/lock/set', 'UNLOCK', { qos: 1 });
      // A report the outsider may make, after the refused command: once it is seen, the command would have been too.
      await outsider.publishAsync('hearth-demo/hallway_motion', JSON.stringify({ occupancy: true }), { qos: 1 });
      await waitFor('the allowed report', () => h.seen.some((m) => m.topic === 'hearth-demo/hallway_motion'));
      assert.ok(!h.seen.some((m) => m.topic === 'hearth-demo/front_door/lock/set'), 'the broker dropped the command');
      assert.equal(h.hearth.bridge.cache.get('front_door.lock')?.value, 'locked');
    } finally {
      await outsider.endAsync(true);
    }
    const r = await h.hearth.tools.call('front_door_lock', { action: 'lock' }, OWNER);
    assert.match(r.text ?? '', /^confirmed/, JSON.stringify(r));
  });
});
