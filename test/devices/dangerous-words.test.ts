// Which rules a command is judged by when its payload carries another kind's
// dangerous word (issue 15, finding 2). Device files give the entities.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeCommand } from '../../src/devices/commands.js';
import { dangerousWordIn, heldTo, judgePayload, MAX_JUDGED_CHARS, MAX_JUDGED_DEPTH } from '../../src/devices/dangerous-words.js';
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Entity } from '../../src/devices/model.js';

function entity(yaml: string): Entity {
  const parsed = parseDeviceFile('words.yaml', `devices:\n  - id: d\n    entities:\n      e:\n${yaml.replace(/^/gm, '        ')}\n`);
  assert.ok('devices' in parsed, JSON.stringify(parsed));
  return parsed.devices[0].entities[0];
}

const sent = (e: Entity, command: Parameters<typeof encodeCommand>[1]) => encodeCommand(e, command).map((m) => m.payload);

describe('dangerous words', () => {
  it('a lock unlocking is judged as a lock unlocking; a light saying UNLOCK is judged as one too', () => {
    const lock = entity('kind: lock\ncommand_topic: l/set');
    assert.deepEqual(heldTo(lock, sent(lock, { action: 'unlock' })), { kind: 'lock', action: 'unlock', word: 'UNLOCK' });
    assert.deepEqual(heldTo(lock, sent(lock, { action: 'lock' })), { kind: 'lock' });
    const light = entity('kind: light\ncommand_topic: p/set\npayloads: { on: unlock, off: LOCK }');
    assert.deepEqual(heldTo(light, sent(light, { action: 'turn_on' })), { kind: 'lock', action: 'unlock', word: 'UNLOCK' });
    // Its other words are still judged under the lock's rules, as its own action.
    assert.deepEqual(heldTo(light, sent(light, { action: 'turn_off' })), { kind: 'lock', word: 'UNLOCK' });
  });

  it('finds the word in JSON commands, and only as a whole word', () => {
    const light = entity('kind: light\ncommand_topic: p/set\ncommand_format: json\nvalue_path: state\npayloads: { on: DISARM, off: "OFF" }');
    const payloads = sent(light, { action: 'turn_on' });
    assert.match(payloads[0], /"DISARM"/);
    assert.deepEqual(heldTo(light, payloads), { kind: 'alarm_control_panel', action: 'disarm', word: 'DISARM' });
    assert.equal(dangerousWordIn('UNLOCKED'), undefined);
    assert.equal(dangerousWordIn('{"state":"not OPEN"}'), undefined);
    assert.equal(dangerousWordIn(' open ')?.action, 'open');
    assert.equal(dangerousWordIn(`${'['.repeat(50)}"UNLOCK"${']'.repeat(50)}`)?.word, 'UNLOCK', 'found at any depth it judges');
  });

  it('judges every byte: a word far into a long payload is found, and what is too long or deep to judge is refused', () => {
    const padded = `{"state":"UNLOCK","pad":"${'x'.repeat(200_000)}"}`;
    assert.equal(judgePayload(padded).word?.word, 'UNLOCK');
    assert.equal(judgePayload(`{"pad":"${'x'.repeat(200_000)}","state":"unlock"}`).word?.word, 'UNLOCK', 'after the padding too');
    const tooLong = `{"pad":"${'x'.repeat(MAX_JUDGED_CHARS)}"}`;
    assert.match(judgePayload(tooLong).unjudgeable ?? '', /over the 262144 Hearth judges/);
    const tooDeep = `${'['.repeat(MAX_JUDGED_DEPTH + 1)}"ON"${']'.repeat(MAX_JUDGED_DEPTH + 1)}`;
    assert.match(judgePayload(tooDeep).unjudgeable ?? '', /deeper than 64 levels/);
    // JSON-like text a lenient device parser may read (single quotes, a trailing comma) is judged word by word.
    assert.equal(judgePayload("{state: 'UNLOCK'}").word?.word, 'UNLOCK');
    assert.equal(judgePayload('{"state":"DISARM",}').word?.word, 'DISARM');
    assert.equal(judgePayload('{"state":"ON",}').word, undefined);
    // A payload that cannot be judged holds the command back before any rule is asked.
    const light = entity('kind: light\ncommand_topic: p/set');
    assert.match(heldTo(light, [tooLong]).unjudgeable ?? '', /over the/);
  });

  it('a select that can choose "open" is held to the rules for garage doors; a blind opening is a cover', () => {
    const select = entity('kind: select\ncommand_topic: s/set\noptions: { value: [closed, Open] }');
    assert.deepEqual(heldTo(select, ['Open']), { kind: 'cover', deviceClass: 'garage', action: 'open', word: 'OPEN' });
    assert.deepEqual(heldTo(select, ['closed']), { kind: 'cover', deviceClass: 'garage', word: 'OPEN' });
    const blind = entity('kind: cover\ndevice_class: blind\ncommand_topic: b/set');
    assert.deepEqual(heldTo(blind, sent(blind, { action: 'open' })), { kind: 'cover', deviceClass: 'blind', action: 'open', word: 'OPEN' });
    const plain = entity('kind: switch\ncommand_topic: w/set');
    assert.deepEqual(heldTo(plain, sent(plain, { action: 'turn_on' })), { kind: 'switch' });
  });
});
