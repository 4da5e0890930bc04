// What the doors that answer people in words (voice, chat apps) say about a
// turn: one sentence per held call, in words a person hears, never the rule,
// the approval id or a command line.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { approvalSentence, approversPossessive, doingPhrase, spokenName } from '../../src/agent/spoken.js';

describe('spoken answers', () => {
  it('names a device as a person says it, cleaned of what a device could hide in it', () => {
    assert.equal(spokenName('Garage door'), 'the garage door');
    assert.equal(spokenName('TV'), 'the TV');
    assert.equal(spokenName('The porch light'), 'the porch light');
    assert.equal(spokenName('Porch\u202e light\u0007'), 'the porch light');
    assert.equal(spokenName(''), 'that device');
  });

  it('says what a held call would do, and who may approve it, in one sentence', () => {
    assert.equal(doingPhrase('open', 'Garage door'), 'opening the garage door');
    assert.equal(doingPhrase('set_brightness', 'Lamp'), 'changing the lamp');
    assert.equal(doingPhrase(undefined, undefined), 'using that device');
    assert.equal(approversPossessive(['role:owner']), "an owner's");
    assert.equal(approversPossessive(['role:owner', 'role:parent', 'cli:alice']), "an owner's or a parent's or alice's");
    assert.equal(approversPossessive(['*']), "someone's");
    assert.equal(
      approvalSentence([{ doing: doingPhrase('open', 'Garage door'), approvers: ['role:owner'] }]),
      "Opening the garage door needs an owner's approval; I've asked.",
    );
    assert.equal(
      approvalSentence([
        { doing: 'unlocking the front door', approvers: ['role:owner'] },
        { doing: 'opening the garage door', approvers: ['role:owner'] },
      ]),
      "Unlocking the front door and opening the garage door need an owner's approval; I've asked.",
    );
  });
});
