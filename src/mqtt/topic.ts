// MQTT topic filters: `+` matches one level, `#` the rest.

export function topicMatches(filter: string, topic: string): boolean {
  if (filter === topic) return true;
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    // `a/#` also matches `a`; wildcards at the first level never match `$SYS`-style topics.
    if (f[i] === '#') return !(i === 0 && t[0].startsWith('$'));
    if (i >= t.length) return false;
    if (f[i] === '+') {
      if (i === 0 && t[0].startsWith('$')) return false;
      continue;
    }
    if (f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

/** True when a string is safe to publish to: no wildcard, no NUL, not empty, not a $SYS topic. */
export function isPublishableTopic(topic: string): boolean {
  return topic.length > 0 && topic.length <= 65535 && !/[#+\u0000]/.test(topic) && !topic.startsWith('$');
}
