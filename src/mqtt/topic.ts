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

/** A well-formed MQTT topic filter: not empty, `#` only as the whole last level, `+` only as a whole level, no NUL. */
export function isValidFilter(filter: string): boolean {
  if (!filter.length || filter.length > 65535 || filter.includes('\u0000')) return false;
  const levels = filter.split('/');
  return levels.every((l, i) => (l === '#' ? i === levels.length - 1 : l === '+' || !/[#+]/.test(l)));
}

/**
 * Whether every topic `requested` can match is matched by `allowed`: an account held to `a/+` may subscribe to
 * `a/b` or `a/+`, never `a/#` (which also matches `a` and `a/b/c`). Spec rules kept: `#` matches its parent level
 * (`a/#` matches `a`), `+` matches an empty level, and a wildcard first level never matches a `$` topic, so `#`
 * does not cover `$SYS/#`. A malformed filter is covered by nothing.
 */
export function filterCovers(allowed: string, requested: string): boolean {
  if (!isValidFilter(allowed) || !isValidFilter(requested)) return false;
  const a = allowed.split('/');
  const r = requested.split('/');
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '#') {
      // Everything from here down, and the parent level: but at the first level no `$` topic.
      if (i === 0) return !(r[0] !== '+' && r[0] !== '#' && r[0].startsWith('$'));
      return i <= r.length;
    }
    // The requested filter ended one level up: it matches that parent topic, which only a `#` here would.
    if (i >= r.length) return false;
    // A requested `#` matches deeper topics and its parent: only an allowed `#` at the same level covers that.
    if (r[i] === '#') return false;
    if (a[i] === '+') {
      if (i === 0 && r[0] !== '+' && r[0].startsWith('$')) return false;
      continue;
    }
    // An allowed literal level covers only the same literal (a requested `+` matches other words too).
    if (a[i] !== r[i]) return false;
  }
  return r.length === a.length;
}
