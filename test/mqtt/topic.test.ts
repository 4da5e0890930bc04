// Topic filters: matching a topic, and whether one filter covers every topic another can match (what the
// embedded broker asks before it lets an account held to `a/+` subscribe to a filter).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { filterCovers, isValidFilter, topicMatches } from '../../src/mqtt/topic.js';

describe('topic filters', () => {
  it('match as the spec says: # takes its parent, + an empty level, wildcards first never a $ topic', () => {
    assert.equal(topicMatches('a/#', 'a'), true);
    assert.equal(topicMatches('a/+', 'a/'), true);
    assert.equal(topicMatches('a/+/c', 'a//c'), true);
    assert.equal(topicMatches('#', '$SYS/broker/clients'), false);
    assert.equal(topicMatches('+/broker', '$SYS/broker'), false);
    assert.equal(topicMatches('$SYS/#', '$SYS/broker'), true);
  });

  it('are well formed only with whole-level wildcards and # last', () => {
    for (const f of ['a', 'a/+', 'a/#', '#', '+', '/', 'a//b', '$SYS/#']) assert.equal(isValidFilter(f), true, f);
    for (const f of ['', 'a/#/b', 'a#', 'a/b+', '+a', 'a\u0000b']) assert.equal(isValidFilter(f), false, JSON.stringify(f));
  });

  const covers: Array<[string, string, boolean]> = [
    // + covers one level of anything, and a requested + at that level; never deeper, never the parent.
    ['a/+', 'a/b', true],
    ['a/+', 'a/+', true],
    ['a/+', 'a/#', false],
    ['a/+', 'a', false],
    ['a/+', 'a/b/c', false],
    ['a/+', 'a/+/c', false],
    // # covers everything below and the parent itself.
    ['a/#', 'a', true],
    ['a/#', 'a/#', true],
    ['a/#', 'a/+/c', true],
    ['a/#', 'b/#', false],
    ['a/b/#', 'a', false],
    ['a/b/#', 'a/#', false],
    ['a/+/#', 'a/#', false],
    ['+/#', 'a', true],
    // A requested wildcard is covered only by a wildcard, never by one literal it happens to include.
    ['a/b', 'a/+', false],
    ['a/b', 'a/b', true],
    ['a/b', 'a/b/#', false],
    // Empty levels are levels.
    ['a/+', 'a/', true],
    ['a/+/b', 'a//b', true],
    ['a/', 'a/+', false],
    ['+/+', '/x', true],
    ['/#', '/', true],
    // $ topics: a wildcard first level never matches them, so nothing but a $ filter covers one.
    ['#', '$SYS/#', false],
    ['#', '$SYS/broker', false],
    ['+/#', '$SYS/broker', false],
    ['+/broker', '$SYS/broker', false],
    ['#', '#', true],
    ['#', '+/x', true],
    ['$SYS/#', '$SYS/broker/clients', true],
    ['$SYS/+', '$SYS/#', false],
    // Malformed filters cover and are covered by nothing.
    ['#', 'a/#/b', false],
    ['a/#/b', 'a/x/b', false],
  ];
  for (const [allowed, requested, expected] of covers) {
    it(`${allowed} ${expected ? 'covers' : 'does not cover'} ${requested || '(empty)'}`, () => {
      assert.equal(filterCovers(allowed, requested), expected);
    });
  }

  it('agrees with matching: a covered filter matches no topic the cover does not', () => {
    const topics = ['a', 'a/', 'a/b', 'a//b', 'a/b/c', 'b', '/', '/x', '$SYS/broker', '$SYS', 'a/x/b'];
    const filters = ['a/+', 'a/#', '#', '+/#', 'a/b', '+/+', '/#', '$SYS/#', 'a/+/b', '+'];
    for (const allowed of filters)
      for (const requested of filters) {
        if (!filterCovers(allowed, requested)) continue;
        for (const t of topics) if (topicMatches(requested, t)) assert.ok(topicMatches(allowed, t), `${allowed} covers ${requested} but not ${t}`);
      }
  });
});
