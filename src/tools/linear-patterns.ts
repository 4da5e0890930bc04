// The regular-expression engine for the schemas of flow-provided tools. A
// flow's `pattern` (or `patternProperties`) is run by the daemon on every
// caller's arguments, on the one event loop: `^(a+)+$` against forty a's and
// a "!" would stall the whole home for minutes. So these patterns run on V8's
// linear-time engine (the `l` flag), and a pattern it cannot run in linear
// time (backreferences, lookaround) is refused when the tool is declared.
import { setFlagsFromString } from 'node:v8';

// Only makes the `l` flag available; no other regular expression changes.
setFlagsFromString('--enable-experimental-regexp-engine');

/** ajv's `code.regExp`: compiles `pattern` for linear-time matching, or throws naming why not. */
export function linearRegExp(pattern: string): RegExp {
  // Without the `u` flag these would silently mean something else (`\p{L}` is "p{L}"): refused, not reinterpreted.
  if (/\\[pPu]\{/.test(pattern))
    throw new Error(`pattern ${JSON.stringify(pattern.slice(0, 80))} uses \\p{...} or \\u{...}, which flow tool schemas do not support; use character ranges`);
  try {
    // The linear engine takes no `u` flag; patterns match by UTF-16 code unit.
    return new RegExp(pattern, 'l');
  } catch (err) {
    throw new Error(
      `pattern ${JSON.stringify(pattern.slice(0, 80))} cannot be matched in linear time (${(err as Error).message.replace(/^Invalid regular expression: /, '')}); ` +
        'backreferences, lookahead and lookbehind are not supported in a flow tool schema',
    );
  }
}
linearRegExp.code = 'linearRegExp';
