// A small, bounded evaluator for the Jinja templates Home Assistant discovery
// payloads carry (value_template, availability templates, command templates
// with constant inputs). It covers the common forms -- `{{ value_json.a.b }}`,
// `{{ value_json['a'].b }}`, `{{ value | float | round(1) }}`, inline
// `x if c else y`, `{% if %}...{% endif %}`, `{% set %}`, simple `{% for %}`,
// dict/list literals, the usual filters and tests -- with Python's semantics
// where they show (True/None rendering, truthiness, `in`, floor division).
//
// Anything outside that subset fails at compile time with a TemplateError that
// names the construct, so the adapter can log one clear line instead of
// guessing. Evaluation is bounded and reads only own properties of data, so a
// hostile template or payload cannot reach JavaScript internals or hang the
// bridge: a step budget (every statement, expression and loop iteration), a
// size budget on every intermediate value (string length, list length), and a
// work budget (characters and items produced or walked, summed over the whole
// render) so that `~`, `+`, `*` and filters cannot build giant strings. A
// render over budget fails with a RenderError that says which. No regular
// expressions, no time, no access to Home Assistant state.

import { JsonLimitError, MAX_JSON_DEPTH, parseBoundedJson } from '../../../util/bounded-json.js';
import { MAX_JUDGED_CHARS } from '../../dangerous-words.js';

export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

export class RenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RenderError';
  }
}

export const MAX_TEMPLATE_CHARS = 16 * 1024;
const MAX_DEPTH = 48;
/** Statements, expressions and loop iterations one render may take. */
export const MAX_STEPS = 200_000;
/** Longest text one render may output: no longer than a command payload Hearth can judge whole. */
export const MAX_OUTPUT = MAX_JUDGED_CHARS;
/** Longest string any intermediate value may be (a whole state payload fits). */
export const MAX_VALUE_CHARS = 256 * 1024;
/** Most items any intermediate list may hold. */
export const MAX_LIST_ITEMS = 65_536;
/** Characters and items one render may produce or walk in all (tens of milliseconds of work at most). */
export const MAX_WORK = 4_000_000;
/** What one comparison of two values costs against MAX_WORK: it takes about as long as copying 200 characters. */
const COMPARE_COST = 200;
const MAX_RANGE = 10_000;

// ---------------------------------------------------------------------------
// Budgets
// ---------------------------------------------------------------------------

/** The work budget of the render in progress (renders are synchronous, so one at a time). */
let work: { used: number } | undefined;
/** What the last render cost (work units plus steps), for budgets across renders (template-work.ts). */
let lastCost = 0;

/** The cost of the render that finished last (successful or not). */
export function lastRenderCost(): number {
  return lastCost;
}

/** Count `units` of work (characters or items made or walked) against the render's budget. */
function charge(units: number): void {
  if (!work) return;
  work.used += units;
  if (work.used > MAX_WORK) throw new RenderError(`template needs too much work (over ${MAX_WORK} characters and items)`);
}

/** A string about to be made of `length` characters: refused when over the size budget, else charged. */
function allowChars(length: number, what: string): void {
  if (length > MAX_VALUE_CHARS) throw new RenderError(`${what} would be too long: ${length} characters, over the ${MAX_VALUE_CHARS}-character limit`);
  charge(length);
}

/** A list about to hold `length` items: refused when over the size budget, else charged. */
function allowItems(length: number, what: string): void {
  if (length > MAX_LIST_ITEMS) throw new RenderError(`${what} would be too long: ${length} items, over the ${MAX_LIST_ITEMS}-item limit`);
  charge(length);
}

/** Join parts into one string within the size budget, refusing as soon as it would pass it. */
function joinBounded(parts: Iterable<string>, sep: string, what: string): string {
  const out: string[] = [];
  let length = 0;
  for (const part of parts) {
    length += part.length + (out.length ? sep.length : 0);
    allowChars(length, what);
    out.push(part);
  }
  charge(length);
  return out.join(sep);
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

/** Jinja's Undefined: renders as '', falsy, and fails when you look inside it. */
export class Undefined {
  constructor(readonly hint: string) {}
}
const isUndef = (v: unknown): v is Undefined => v instanceof Undefined;

/** A bound method of a str / dict / list, created by attribute access and called at once. */
class Method {
  constructor(
    readonly self: unknown,
    readonly name: string,
  ) {}
}

type Dict = Record<string, unknown>;
const isDict = (v: unknown): v is Dict =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  !Buffer.isBuffer(v) &&
  !(v instanceof Undefined) &&
  !(v instanceof Method) &&
  !(v instanceof Loop);
const own = (o: object, k: string) => Object.hasOwn(o, k);

class Loop {
  constructor(
    readonly index0: number,
    readonly length: number,
  ) {}
}

const DICT_METHODS = new Set(['get', 'keys', 'values', 'items']);
const STR_METHODS = new Set([
  'lower',
  'upper',
  'strip',
  'lstrip',
  'rstrip',
  'split',
  'replace',
  'startswith',
  'endswith',
  'title',
  'capitalize',
  'isdigit',
  'isnumeric',
  'count',
  'find',
  'join',
]);
const LIST_METHODS = new Set(['index', 'count']);

/** Dict keys: strings stay, everything else is keyed by its Python repr (None -> "None"). */
function dictKey(k: unknown): string {
  return typeof k === 'string' ? k : `\u0000${pyRepr(k)}`;
}
function keyValue(k: string): unknown {
  if (!k.startsWith('\u0000')) return k;
  const r = k.slice(1);
  if (r === 'None') return null;
  if (r === 'True') return true;
  if (r === 'False') return false;
  const n = Number(r);
  return Number.isNaN(n) ? r : n;
}

export function truthy(v: unknown): boolean {
  if (v === null || v === undefined || isUndef(v)) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (typeof v === 'string') return v.length > 0;
  if (Array.isArray(v)) return v.length > 0;
  if (Buffer.isBuffer(v)) return v.length > 0;
  if (isDict(v)) return Object.keys(v).length > 0;
  return true;
}

function pyNumber(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (n === Infinity) return 'inf';
  if (n === -Infinity) return '-inf';
  return String(n);
}

function pyStringRepr(s: string): string {
  allowChars(s.length + 2, 'a string repr');
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = '';
  for (const ch of s) {
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch < ' ' || ch === '\u007f') out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${quote}${out}${quote}`;
}

function bytesRepr(b: Buffer): string {
  allowChars(b.length + 3, 'a bytes repr');
  let out = '';
  for (const byte of b) {
    if (byte === 0x5c) out += '\\\\';
    else if (byte === 0x27) out += "\\'";
    else if (byte === 0x0a) out += '\\n';
    else if (byte === 0x0d) out += '\\r';
    else if (byte === 0x09) out += '\\t';
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return `b'${out}'`;
}

/** Python's repr(). */
export function pyRepr(v: unknown): string {
  if (typeof v === 'string') return pyStringRepr(v);
  return pyStr(v, true);
}

/** Python's str() (what `{{ v }}` prints). */
export function pyStr(v: unknown, inner = false): string {
  if (v === null || v === undefined) return 'None';
  if (isUndef(v)) return '';
  if (typeof v === 'string') return inner ? pyStringRepr(v) : v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNumber(v);
  if (Buffer.isBuffer(v)) return bytesRepr(v);
  if (Array.isArray(v))
    return `[${joinBounded(
      mapLazy(v, (x) => pyRepr(x)),
      ', ',
      'a list as text',
    )}]`;
  if (v instanceof Method) return `<built-in method ${v.name}>`;
  if (v instanceof Loop) return '<LoopContext>';
  if (isDict(v))
    return `{${joinBounded(
      mapLazy(Object.keys(v), (k) => `${pyRepr(keyValue(k))}: ${pyRepr(v[k])}`),
      ', ',
      'a dict as text',
    )}}`;
  return String(v);
}

/** Items mapped one at a time, so a joiner can stop before the rest are made. */
function* mapLazy<T, U>(items: Iterable<T>, fn: (x: T) => U): Generator<U> {
  for (const x of items) yield fn(x);
}

export function pyEquals(a: unknown, b: unknown): boolean {
  charge(COMPARE_COST);
  if (isUndef(a) || isUndef(b)) return isUndef(a) && isUndef(b);
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  const numLike = (x: unknown) => typeof x === 'number' || typeof x === 'boolean';
  if (numLike(a) && numLike(b)) return Number(a) === Number(b);
  if (typeof a === 'string' && typeof b === 'string') return a === b;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => pyEquals(x, b[i]));
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (isDict(a) && isDict(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => own(b, k) && pyEquals(a[k], b[k]));
  }
  return false;
}

function compare(a: unknown, b: unknown, op: string): boolean {
  charge(COMPARE_COST);
  const numLike = (x: unknown) => typeof x === 'number' || typeof x === 'boolean';
  let c: number;
  if (numLike(a) && numLike(b)) c = Number(a) - Number(b);
  else if (typeof a === 'string' && typeof b === 'string') c = a < b ? -1 : a > b ? 1 : 0;
  else throw new RenderError(`'${op}' not supported between ${typeName(a)} and ${typeName(b)}`);
  switch (op) {
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    default:
      return c >= 0;
  }
}

function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (isUndef(v)) return 'Undefined';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'str';
  if (Array.isArray(v)) return 'list';
  if (Buffer.isBuffer(v)) return 'bytes';
  if (isDict(v)) return 'dict';
  return 'object';
}

/** Python float(): numbers, bools and numeric text; anything else fails. */
function toFloat(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const t = v.trim().replace(/_/g, '');
    if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return Number(t);
    const l = t.toLowerCase();
    if (/^[+-]?(inf|infinity)$/.test(l)) return l.startsWith('-') ? -Infinity : Infinity;
    if (/^[+-]?nan$/.test(l)) return NaN;
  }
  return undefined;
}

/** Jinja's do_int: int(), then int(float()), else undefined. */
function toInt(v: unknown, base = 10): number | undefined {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : undefined;
  if (typeof v === 'string') {
    const t = v.trim().replace(/_/g, '');
    if (base === 10 && /^[+-]?\d+$/.test(t)) return Number(t);
    if (base !== 10) {
      const clean = t.replace(/^0[xob]/i, '');
      const n = parseInt(clean, base);
      if (!Number.isNaN(n) && /^[0-9a-z]+$/i.test(clean)) return n;
    }
    const f = toFloat(t);
    if (f !== undefined && Number.isFinite(f)) return Math.trunc(f);
  }
  return undefined;
}

/** Python's round(): half to even. */
function pyRound(x: number, digits: number): number {
  const m = 10 ** digits;
  const scaled = x * m;
  const floor = Math.floor(scaled);
  const diff = scaled - floor;
  let r: number;
  if (Math.abs(diff - 0.5) < 1e-9) r = floor % 2 === 0 ? floor : floor + 1;
  else r = Math.round(scaled);
  return r / m;
}

function length(v: unknown): number {
  if (typeof v === 'string' || Array.isArray(v) || Buffer.isBuffer(v)) return v.length;
  if (isDict(v)) return Object.keys(v).length;
  if (isUndef(v)) return 0;
  throw new RenderError(`object of type '${typeName(v)}' has no len()`);
}

function iterate(v: unknown): unknown[] {
  if (Array.isArray(v)) {
    charge(v.length);
    return v;
  }
  if (typeof v === 'string' || Buffer.isBuffer(v)) allowItems(v.length, 'the sequence');
  if (typeof v === 'string') return [...v];
  if (Buffer.isBuffer(v)) return [...v];
  if (isDict(v)) {
    const keys = Object.keys(v);
    allowItems(keys.length, 'the keys');
    return keys.map(keyValue);
  }
  if (isUndef(v)) return [];
  throw new RenderError(`'${typeName(v)}' object is not iterable`);
}

// ---------------------------------------------------------------------------
// JSON as Python and Jinja print it
// ---------------------------------------------------------------------------

function jsonDump(v: unknown, compact: boolean, sortKeys = false): string {
  const sep = compact ? [',', ':'] : [', ', ': '];
  const enc = (x: unknown): string => {
    if (x === null || x === undefined || isUndef(x)) return 'null';
    if (typeof x === 'boolean') return x ? 'true' : 'false';
    if (typeof x === 'number') return Number.isFinite(x) ? String(x) : Number.isNaN(x) ? 'NaN' : x > 0 ? 'Infinity' : '-Infinity';
    if (typeof x === 'string') {
      allowChars(x.length + 2, 'the JSON text');
      return JSON.stringify(x);
    }
    if (Array.isArray(x)) return `[${joinBounded(mapLazy(x, enc), sep[0], 'the JSON text')}]`;
    if (isDict(x)) {
      const keys = Object.keys(x);
      if (sortKeys) keys.sort();
      return `{${joinBounded(
        mapLazy(keys, (k) => `${JSON.stringify(pyStr(keyValue(k)))}${sep[1]}${enc(x[k])}`),
        sep[0],
        'the JSON text',
      )}}`;
    }
    throw new RenderError(`Object of type ${typeName(x)} is not JSON serializable`);
  };
  return enc(v);
}

// ---------------------------------------------------------------------------
// Lexer
// ---------------------------------------------------------------------------

type Tok = { t: 'name'; v: string } | { t: 'num'; v: number } | { t: 'str'; v: string } | { t: 'op'; v: string };

type Chunk = { k: 'text'; v: string } | { k: 'var'; toks: Tok[] } | { k: 'block'; toks: Tok[] };

const OPS = ['**', '//', '==', '!=', '<=', '>=', '+', '-', '*', '/', '%', '~', '<', '>', '(', ')', '[', ']', '{', '}', ',', '.', ':', '|', '='];

function unescapeString(body: string): string {
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch !== '\\' || i === body.length - 1) {
      out += ch;
      continue;
    }
    const n = body[++i];
    switch (n) {
      case '\\':
        out += '\\';
        break;
      case "'":
        out += "'";
        break;
      case '"':
        out += '"';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '0':
        out += '\0';
        break;
      case '\n':
        break;
      case 'x': {
        const hex = body.slice(i + 1, i + 3);
        if (/^[0-9a-fA-F]{2}$/.test(hex)) {
          out += String.fromCharCode(parseInt(hex, 16));
          i += 2;
        } else out += '\\x';
        break;
      }
      case 'u': {
        const hex = body.slice(i + 1, i + 5);
        if (/^[0-9a-fA-F]{4}$/.test(hex)) {
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
        } else out += '\\u';
        break;
      }
      default:
        // Python keeps an unknown escape as written.
        out += `\\${n}`;
    }
  }
  return out;
}

/** Tokens of one tag, from `pos` to its closing `}}` / `%}` (bracket-balanced, strings skipped). */
function lexTag(src: string, pos: number, close: '}}' | '%}'): { toks: Tok[]; end: number; stripAfter: boolean } {
  const toks: Tok[] = [];
  let depth = 0;
  let i = pos;
  while (i < src.length) {
    const ch = src[i];
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }
    if (depth === 0) {
      if (src.startsWith(close, i)) return { toks, end: i + 2, stripAfter: false };
      if (ch === '-' && src.startsWith(close, i + 1)) return { toks, end: i + 3, stripAfter: true };
    }
    if (ch === '"' || ch === "'") {
      let j = i + 1;
      while (j < src.length && src[j] !== ch) j += src[j] === '\\' ? 2 : 1;
      if (j >= src.length) throw new TemplateError('unterminated string');
      toks.push({ t: 'str', v: unescapeString(src.slice(i + 1, j)) });
      i = j + 1;
      continue;
    }
    if (/[0-9]/.test(ch)) {
      const prev = toks[toks.length - 1];
      const afterDot = prev?.t === 'op' && prev.v === '.';
      const m = afterDot ? /^\d+/.exec(src.slice(i, i + 40)) : /^(\d[\d_]*)(\.\d[\d_]*)?([eE][+-]?\d+)?/.exec(src.slice(i, i + 400));
      const text = m![0];
      toks.push({ t: 'num', v: Number(text.replace(/_/g, '')) });
      i += text.length;
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i, i + 256))!;
      toks.push({ t: 'name', v: m[0] });
      i += m[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new TemplateError(`unexpected character ${JSON.stringify(ch)}`);
    if (op === '(' || op === '[' || op === '{') depth++;
    if (op === ')' || op === ']' || op === '}') {
      if (depth === 0) throw new TemplateError(`unbalanced ${op}`);
      depth--;
    }
    toks.push({ t: 'op', v: op });
    i += op.length;
  }
  throw new TemplateError(`a tag is not closed with ${close}`);
}

function lex(src: string): Chunk[] {
  const chunks: Chunk[] = [];
  let i = 0;
  let stripNext = false;
  const pushText = (text: string, stripEnd: boolean) => {
    let t = stripNext ? text.replace(/^\s+/, '') : text;
    if (stripEnd) t = t.replace(/\s+$/, '');
    if (t) chunks.push({ k: 'text', v: t });
  };
  while (i < src.length) {
    const open = src.slice(i).search(/\{[{%#]/);
    if (open < 0) {
      pushText(src.slice(i), false);
      break;
    }
    const at = i + open;
    const kind = src[at + 1];
    const minus = src[at + 2] === '-';
    pushText(src.slice(i, at), minus);
    let start = at + 2 + (minus || src[at + 2] === '+' ? 1 : 0);
    if (kind === '#') {
      const end = src.indexOf('#}', start);
      if (end < 0) throw new TemplateError('a comment is not closed with #}');
      stripNext = src[end - 1] === '-';
      i = end + 2;
      continue;
    }
    const { toks, end, stripAfter } = lexTag(src, start, kind === '{' ? '}}' : '%}');
    start = end;
    if (kind === '%' && toks[0]?.t === 'name' && toks[0].v === 'raw') {
      const close = /\{%-?\s*endraw\s*-?%\}/.exec(src.slice(end));
      if (!close) throw new TemplateError('{% raw %} is not closed');
      stripNext = false;
      pushText(src.slice(end, end + close.index), false);
      i = end + close.index + close[0].length;
      stripNext = close[0].includes('-%}');
      continue;
    }
    chunks.push(kind === '{' ? { k: 'var', toks } : { k: 'block', toks });
    stripNext = stripAfter;
    i = start;
  }
  return chunks;
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

type Expr =
  | { t: 'const'; v: unknown }
  | { t: 'name'; n: string }
  | { t: 'list'; items: Expr[] }
  | { t: 'dict'; pairs: Array<[Expr, Expr]> }
  | { t: 'attr'; obj: Expr; name: string }
  | { t: 'item'; obj: Expr; key: Expr }
  | { t: 'slice'; obj: Expr; start?: Expr; stop?: Expr; step?: Expr }
  | { t: 'call'; fn: Expr; args: Expr[]; kwargs: Array<[string, Expr]> }
  | { t: 'filter'; obj: Expr; name: string; args: Expr[]; kwargs: Array<[string, Expr]> }
  | { t: 'test'; obj: Expr; name: string; args: Expr[]; negate: boolean }
  | { t: 'unary'; op: string; x: Expr }
  | { t: 'bin'; op: string; a: Expr; b: Expr }
  | { t: 'cond'; test: Expr; a: Expr; b?: Expr };

type Stmt =
  | { t: 'text'; v: string }
  | { t: 'out'; e: Expr }
  | { t: 'if'; branches: Array<{ test: Expr; body: Stmt[] }>; orelse: Stmt[] }
  | { t: 'for'; targets: string[]; iter: Expr; body: Stmt[]; orelse: Stmt[] }
  | { t: 'set'; name: string; e: Expr }
  | { t: 'break' }
  | { t: 'continue' };

const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'is', 'if', 'else', 'elif']);

class ExprParser {
  private i = 0;
  private depth = 0;
  constructor(
    private readonly toks: Tok[],
    private readonly names: Set<string>,
  ) {}

  done(): boolean {
    return this.i >= this.toks.length;
  }
  peek(offset = 0): Tok | undefined {
    return this.toks[this.i + offset];
  }
  isOp(v: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t?.t === 'op' && t.v === v;
  }
  isName(v: string, offset = 0): boolean {
    const t = this.peek(offset);
    return t?.t === 'name' && t.v === v;
  }
  next(): Tok {
    const t = this.toks[this.i++];
    if (!t) throw new TemplateError('unexpected end of expression');
    return t;
  }
  expectOp(v: string): void {
    const t = this.next();
    if (t.t !== 'op' || t.v !== v) throw new TemplateError(`expected '${v}'`);
  }
  expectName(): string {
    const t = this.next();
    if (t.t !== 'name') throw new TemplateError('expected a name');
    return t.v;
  }
  end(): void {
    if (!this.done()) throw new TemplateError(`unexpected ${describe(this.peek()!)}`);
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw new TemplateError('expression is nested too deeply');
  }

  expression(allowCond = true): Expr {
    this.enter();
    try {
      const e = this.or();
      if (allowCond && this.isName('if')) {
        this.i++;
        const test = this.or();
        let b: Expr | undefined;
        if (this.isName('else')) {
          this.i++;
          b = this.expression();
        }
        return { t: 'cond', test, a: e, b };
      }
      return e;
    } finally {
      this.depth--;
    }
  }
  private or(): Expr {
    let a = this.and();
    while (this.isName('or')) {
      this.i++;
      a = { t: 'bin', op: 'or', a, b: this.and() };
    }
    return a;
  }
  private and(): Expr {
    let a = this.not();
    while (this.isName('and')) {
      this.i++;
      a = { t: 'bin', op: 'and', a, b: this.not() };
    }
    return a;
  }
  private not(): Expr {
    if (this.isName('not')) {
      this.i++;
      this.enter();
      try {
        return { t: 'unary', op: 'not', x: this.not() };
      } finally {
        this.depth--;
      }
    }
    return this.compare();
  }
  private compare(): Expr {
    let a = this.math1();
    for (;;) {
      const t = this.peek();
      if (t?.t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(t.v)) {
        this.i++;
        a = { t: 'bin', op: t.v, a, b: this.math1() };
      } else if (this.isName('in')) {
        this.i++;
        a = { t: 'bin', op: 'in', a, b: this.math1() };
      } else if (this.isName('not') && this.isName('in', 1)) {
        this.i += 2;
        a = { t: 'bin', op: 'not in', a, b: this.math1() };
      } else return a;
    }
  }
  private math1(): Expr {
    let a = this.concat();
    while (this.isOp('+') || this.isOp('-')) {
      const op = (this.next() as { v: string }).v;
      a = { t: 'bin', op, a, b: this.concat() };
    }
    return a;
  }
  private concat(): Expr {
    let a = this.math2();
    while (this.isOp('~')) {
      this.i++;
      a = { t: 'bin', op: '~', a, b: this.math2() };
    }
    return a;
  }
  private math2(): Expr {
    let a = this.pow();
    while (this.isOp('*') || this.isOp('/') || this.isOp('//') || this.isOp('%')) {
      const op = (this.next() as { v: string }).v;
      a = { t: 'bin', op, a, b: this.pow() };
    }
    return a;
  }
  private pow(): Expr {
    let a = this.unary();
    while (this.isOp('**')) {
      this.i++;
      a = { t: 'bin', op: '**', a, b: this.unary() };
    }
    return a;
  }
  private unary(withFilter = true): Expr {
    let node: Expr;
    if (this.isOp('-') || this.isOp('+')) {
      const op = (this.next() as { v: string }).v;
      this.enter();
      try {
        node = { t: 'unary', op, x: this.unary(false) };
      } finally {
        this.depth--;
      }
    } else node = this.postfix(this.primary());
    return withFilter ? this.filters(node) : node;
  }
  private primary(): Expr {
    const t = this.next();
    if (t.t === 'num') return { t: 'const', v: t.v };
    if (t.t === 'str') {
      let s = t.v;
      while (this.peek()?.t === 'str') s += (this.next() as { v: string }).v;
      return { t: 'const', v: s };
    }
    if (t.t === 'name') {
      if (t.v === 'true' || t.v === 'True') return { t: 'const', v: true };
      if (t.v === 'false' || t.v === 'False') return { t: 'const', v: false };
      if (t.v === 'none' || t.v === 'None') return { t: 'const', v: null };
      if (KEYWORDS.has(t.v)) throw new TemplateError(`unexpected '${t.v}'`);
      this.names.add(t.v);
      return { t: 'name', n: t.v };
    }
    this.enter();
    try {
      if (t.v === '(') {
        if (this.isOp(')')) {
          this.i++;
          return { t: 'list', items: [] };
        }
        const first = this.expression();
        if (this.isOp(',')) {
          const items = [first];
          while (this.isOp(',')) {
            this.i++;
            if (this.isOp(')')) break;
            items.push(this.expression());
          }
          this.expectOp(')');
          return { t: 'list', items };
        }
        this.expectOp(')');
        return first;
      }
      if (t.v === '[') {
        const items: Expr[] = [];
        while (!this.isOp(']')) {
          items.push(this.expression());
          if (!this.isOp(',')) break;
          this.i++;
        }
        this.expectOp(']');
        return { t: 'list', items };
      }
      if (t.v === '{') {
        const pairs: Array<[Expr, Expr]> = [];
        while (!this.isOp('}')) {
          const k = this.expression();
          this.expectOp(':');
          pairs.push([k, this.expression()]);
          if (!this.isOp(',')) break;
          this.i++;
        }
        this.expectOp('}');
        return { t: 'dict', pairs };
      }
    } finally {
      this.depth--;
    }
    throw new TemplateError(`unexpected ${describe(t)}`);
  }
  private postfix(e: Expr): Expr {
    for (;;) {
      if (this.isOp('.')) {
        this.i++;
        const t = this.next();
        if (t.t === 'name') e = { t: 'attr', obj: e, name: t.v };
        else if (t.t === 'num' && Number.isInteger(t.v)) e = { t: 'item', obj: e, key: { t: 'const', v: t.v } };
        else throw new TemplateError('expected a name after .');
      } else if (this.isOp('[')) {
        this.i++;
        this.enter();
        try {
          e = this.subscript(e);
        } finally {
          this.depth--;
        }
      } else if (this.isOp('(')) {
        this.i++;
        if (e.t === 'name' && !own(FUNCTIONS, e.n)) throw new TemplateError(`function '${e.n}' is not supported`);
        if (e.t === 'attr' && !DICT_METHODS.has(e.name) && !STR_METHODS.has(e.name) && !LIST_METHODS.has(e.name)) {
          throw new TemplateError(`method '${e.name}' is not supported`);
        }
        if (e.t !== 'name' && e.t !== 'attr') throw new TemplateError('only functions and methods can be called');
        const { args, kwargs } = this.args();
        e = { t: 'call', fn: e, args, kwargs };
      } else return e;
    }
  }
  private subscript(obj: Expr): Expr {
    let start: Expr | undefined;
    if (!this.isOp(':')) start = this.expression();
    if (this.isOp(']')) {
      this.i++;
      return { t: 'item', obj, key: start! };
    }
    this.expectOp(':');
    let stop: Expr | undefined;
    let step: Expr | undefined;
    if (!this.isOp(']') && !this.isOp(':')) stop = this.expression();
    if (this.isOp(':')) {
      this.i++;
      if (!this.isOp(']')) step = this.expression();
    }
    this.expectOp(']');
    return { t: 'slice', obj, start, stop, step };
  }
  private args(): { args: Expr[]; kwargs: Array<[string, Expr]> } {
    const args: Expr[] = [];
    const kwargs: Array<[string, Expr]> = [];
    this.enter();
    try {
      while (!this.isOp(')')) {
        if (this.peek()?.t === 'name' && this.isOp('=', 1)) {
          const name = this.expectName();
          this.i++;
          kwargs.push([name, this.expression()]);
        } else {
          if (kwargs.length) throw new TemplateError('positional argument after keyword argument');
          args.push(this.expression());
        }
        if (!this.isOp(',')) break;
        this.i++;
      }
      this.expectOp(')');
    } finally {
      this.depth--;
    }
    return { args, kwargs };
  }
  private filters(e: Expr): Expr {
    for (;;) {
      if (this.isOp('|')) {
        this.i++;
        const name = this.expectName();
        if (!FILTERS[name]) throw new TemplateError(`filter '${name}' is not supported`);
        let args: Expr[] = [];
        let kwargs: Array<[string, Expr]> = [];
        if (this.isOp('(')) {
          this.i++;
          ({ args, kwargs } = this.args());
        }
        e = { t: 'filter', obj: e, name, args, kwargs };
      } else if (this.isName('is')) {
        this.i++;
        let negate = false;
        if (this.isName('not')) {
          this.i++;
          negate = true;
        }
        const t = this.next();
        let name: string;
        if (t.t === 'name') name = t.v;
        else if (t.t === 'op' && ['==', '!=', '<', '<=', '>', '>='].includes(t.v)) name = t.v;
        else throw new TemplateError('expected a test name after is');
        if (name === 'None' || name === 'True' || name === 'False') name = name.toLowerCase();
        if (!TESTS[name]) throw new TemplateError(`test '${name}' is not supported`);
        let args: Expr[] = [];
        if (this.isOp('(')) {
          this.i++;
          args = this.args().args;
        } else {
          const n = this.peek();
          if (n && (n.t === 'num' || n.t === 'str' || (n.t === 'name' && !KEYWORDS.has(n.v)))) args = [this.postfix(this.primary())];
        }
        e = { t: 'test', obj: e, name, args, negate };
      } else return e;
    }
  }
}

function describe(t: Tok): string {
  return t.t === 'str' ? 'string' : t.t === 'num' ? `number ${t.v}` : `'${t.v}'`;
}

function parseStatements(chunks: Chunk[], names: Set<string>): Stmt[] {
  let i = 0;
  let nesting = 0;
  const block = (stops: string[]): { body: Stmt[]; stop?: string; stopToks?: Tok[] } => {
    if (++nesting > MAX_DEPTH) throw new TemplateError('blocks are nested too deeply');
    try {
      return blockBody(stops);
    } finally {
      nesting--;
    }
  };
  const blockBody = (stops: string[]): { body: Stmt[]; stop?: string; stopToks?: Tok[] } => {
    const body: Stmt[] = [];
    while (i < chunks.length) {
      const c = chunks[i++];
      if (c.k === 'text') {
        body.push({ t: 'text', v: c.v });
        continue;
      }
      if (c.k === 'var') {
        const p = new ExprParser(c.toks, names);
        const e = p.expression();
        p.end();
        body.push({ t: 'out', e });
        continue;
      }
      const head = c.toks[0];
      if (head?.t !== 'name') throw new TemplateError('a block tag needs a keyword');
      const kw = head.v;
      if (stops.includes(kw)) return { body, stop: kw, stopToks: c.toks };
      const p = new ExprParser(c.toks.slice(1), names);
      switch (kw) {
        case 'if': {
          const branches: Array<{ test: Expr; body: Stmt[] }> = [];
          let test = p.expression();
          p.end();
          let orelse: Stmt[] = [];
          for (;;) {
            const r = block(['elif', 'else', 'endif']);
            branches.push({ test, body: r.body });
            if (r.stop === 'elif') {
              const q = new ExprParser(r.stopToks!.slice(1), names);
              test = q.expression();
              q.end();
              continue;
            }
            if (r.stop === 'else') {
              const r2 = block(['endif']);
              if (r2.stop !== 'endif') throw new TemplateError('{% if %} is not closed');
              orelse = r2.body;
            } else if (r.stop !== 'endif') throw new TemplateError('{% if %} is not closed');
            break;
          }
          body.push({ t: 'if', branches, orelse });
          break;
        }
        case 'for': {
          const targets = [p.expectName()];
          while (p.isOp(',')) {
            p.next();
            targets.push(p.expectName());
          }
          if (!p.isName('in')) throw new TemplateError("expected 'in' in {% for %}");
          p.next();
          const iter = p.expression(false);
          if (p.isName('if') || p.isName('recursive')) throw new TemplateError('{% for ... if %} is not supported');
          p.end();
          const r = block(['else', 'endfor']);
          let orelse: Stmt[] = [];
          if (r.stop === 'else') {
            const r2 = block(['endfor']);
            if (r2.stop !== 'endfor') throw new TemplateError('{% for %} is not closed');
            orelse = r2.body;
          } else if (r.stop !== 'endfor') throw new TemplateError('{% for %} is not closed');
          body.push({ t: 'for', targets, iter, body: r.body, orelse });
          break;
        }
        case 'set': {
          const name = p.expectName();
          if (p.isOp('.') || p.isOp(',')) throw new TemplateError('{% set %} of an attribute or a tuple is not supported');
          if (!p.isOp('=')) throw new TemplateError('{% set %} blocks are not supported');
          p.next();
          const e = p.expression();
          p.end();
          body.push({ t: 'set', name, e });
          break;
        }
        case 'break':
        case 'continue':
          p.end();
          body.push({ t: kw });
          break;
        default:
          throw new TemplateError(`{% ${kw} %} is not supported`);
      }
    }
    return { body };
  };
  const r = block([]);
  if (r.stop) throw new TemplateError(`unexpected {% ${r.stop} %}`);
  return r.body;
}

// ---------------------------------------------------------------------------
// Filters, tests, functions
// ---------------------------------------------------------------------------

type Fn = (value: unknown, args: unknown[], kwargs: Record<string, unknown>) => unknown;

const NO_DEFAULT = Symbol('no default');

function arg(args: unknown[], kwargs: Record<string, unknown>, index: number, name: string, fallback: unknown): unknown {
  if (args.length > index) return args[index];
  if (own(kwargs, name)) return kwargs[name];
  return fallback;
}

function floatFilter(value: unknown, fallback: unknown, name: string): number {
  const f = isUndef(value) ? undefined : toFloat(value);
  if (f !== undefined) return f;
  if (fallback !== NO_DEFAULT) return fallback as number;
  throw new RenderError(`${name} got invalid input '${pyStr(value)}' and no default was specified`);
}

const FILTERS: Record<string, Fn> = {
  abs: (v) => Math.abs(floatFilter(v, NO_DEFAULT, 'abs')),
  bool: (v, a, k) => {
    if (typeof v === 'boolean') return v;
    if (typeof v === 'number') return v !== 0;
    if (typeof v === 'string') {
      const l = v.trim().toLowerCase();
      if (['true', 'on', 'yes', 'enable', '1'].includes(l)) return true;
      if (['false', 'off', 'no', 'disable', '0', 'none'].includes(l)) return false;
    }
    const d = arg(a, k, 0, 'default', NO_DEFAULT);
    if (d !== NO_DEFAULT) return d;
    throw new RenderError(`bool got invalid input '${pyStr(v)}' and no default was specified`);
  },
  capitalize: (v) => {
    const s = pyStr(v);
    charge(s.length);
    return s.charAt(0).toUpperCase() + s.slice(1).toLowerCase();
  },
  count: (v) => length(v),
  length: (v) => length(v),
  default: (v, a, k) => {
    const d = arg(a, k, 0, 'default_value', '');
    const boolean = truthy(arg(a, k, 1, 'boolean', false));
    return isUndef(v) || (boolean && !truthy(v)) ? d : v;
  },
  first: (v) => {
    const items = iterate(v);
    return items.length ? items[0] : new Undefined('first of an empty sequence');
  },
  last: (v) => {
    const items = iterate(v);
    return items.length ? items[items.length - 1] : new Undefined('last of an empty sequence');
  },
  float: (v, a, k) => floatFilter(v, arg(a, k, 0, 'default', NO_DEFAULT), 'float'),
  int: (v, a, k) => {
    const base = Number(arg(a, k, 1, 'base', 10));
    const n = isUndef(v) ? undefined : toInt(v, base);
    if (n !== undefined) return n;
    const d = arg(a, k, 0, 'default', NO_DEFAULT);
    if (d !== NO_DEFAULT) return d;
    throw new RenderError(`int got invalid input '${pyStr(v)}' and no default was specified`);
  },
  join: (v, a, k) =>
    joinBounded(
      mapLazy(iterate(v), (x) => pyStr(x)),
      pyStr(arg(a, k, 0, 'd', '')),
      'the joined text',
    ),
  list: (v) => [...iterate(v)],
  lower: (v) => charged(pyStr(v)).toLowerCase(),
  upper: (v) => charged(pyStr(v)).toUpperCase(),
  title: (v) => charged(pyStr(v)).replace(/\w\S*/g, (w) => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase()),
  trim: (v, a) => (a.length ? stripChars(pyStr(v), pyStr(a[0]), 'both') : pyStr(v).trim()),
  string: (v) => pyStr(v),
  replace: (v, a) => {
    const s = pyStr(v);
    const from = pyStr(a[0]);
    const to = pyStr(a[1]);
    const count = a.length > 2 ? Number(a[2]) : -1;
    return replaceCount(s, from, to, count);
  },
  round: (v, a, k) => {
    const precision = Number(arg(a, k, 0, 'precision', 0));
    const method = pyStr(arg(a, k, 1, 'method', 'common'));
    const x = floatFilter(v, arg(a, k, 2, 'default', NO_DEFAULT), 'round');
    const m = 10 ** precision;
    let r: number;
    if (method === 'ceil') r = Math.ceil(x * m) / m;
    else if (method === 'floor') r = Math.floor(x * m) / m;
    else if (method === 'half') r = Math.round(x * m) / m;
    else r = pyRound(x, precision);
    return r;
  },
  max: (v) => minMax(iterate(v), 1),
  min: (v) => minMax(iterate(v), -1),
  sum: (v) => iterate(v).reduce<number>((acc, x) => acc + floatFilter(x, NO_DEFAULT, 'sum'), 0),
  reverse: (v) => (typeof v === 'string' ? [...iterate(v)].reverse().join('') : [...iterate(v)].reverse()),
  sort: (v, a, k) => {
    // Each comparison is charged as it happens.
    const items = [...iterate(v)].sort((x, y) => (compare(x, y, '<') ? -1 : compare(y, x, '<') ? 1 : 0));
    return truthy(arg(a, k, 0, 'reverse', false)) ? items.reverse() : items;
  },
  unique: (v) => {
    const out: unknown[] = [];
    for (const x of iterate(v)) {
      charge(out.length);
      if (!out.some((y) => pyEquals(x, y))) out.push(x);
    }
    return out;
  },
  tojson: (v) => jsonDump(v, false).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026').replace(/'/g, '\\u0027'),
  to_json: (v, a, k) => jsonDump(v, true, truthy(arg(a, k, 2, 'sort_keys', false))),
  from_json: (v) => {
    try {
      return parseBoundedJson(charged(pyStr(v)), { maxChars: MAX_VALUE_CHARS, maxDepth: MAX_JSON_DEPTH });
    } catch (err) {
      if (err instanceof JsonLimitError && err.reason !== 'not_json') throw new RenderError(`from_json got ${err.message}`);
      throw new RenderError(`from_json got invalid JSON '${pyStr(v).slice(0, 40)}'`);
    }
  },
  multiply: (v, a, k) => {
    const d = arg(a, k, 1, 'default', NO_DEFAULT);
    const x = isUndef(v) ? undefined : toFloat(v);
    if (x === undefined) {
      if (d !== NO_DEFAULT) return d;
      throw new RenderError(`multiply got invalid input '${pyStr(v)}' and no default was specified`);
    }
    return x * floatFilter(a[0], NO_DEFAULT, 'multiply');
  },
  unpack: (v, a, k) => unpack(v, pyStr(arg(a, k, 0, 'format_string', '')), Number(arg(a, k, 1, 'offset', 0))),
  is_defined: (v) => {
    if (isUndef(v)) throw new RenderError(`${v.hint} is undefined`);
    return v;
  },
  iif: (v, a) => iif(v, a),
  bitwise_and: (v, a) => toIntStrict(v) & toIntStrict(a[0]),
  bitwise_or: (v, a) => toIntStrict(v) | toIntStrict(a[0]),
  bitwise_xor: (v, a) => toIntStrict(v) ^ toIntStrict(a[0]),
};
FILTERS.d = FILTERS.default;
FILTERS.e = (v) => pyStr(v);
FILTERS.strip = FILTERS.trim;

/** A string whose length is charged to the budget (for filters that walk it once). */
function charged(s: string): string {
  charge(s.length);
  return s;
}

function toIntStrict(v: unknown): number {
  const n = toInt(v);
  if (n === undefined) throw new RenderError(`'${pyStr(v)}' is not an integer`);
  return n;
}

function iif(v: unknown, a: unknown[]): unknown {
  const ifTrue = a.length > 0 ? a[0] : true;
  const ifFalse = a.length > 1 ? a[1] : false;
  const ifNone = a.length > 2 ? a[2] : ifFalse;
  if (v === null || isUndef(v)) return ifNone;
  return truthy(v) ? ifTrue : ifFalse;
}

function minMax(items: unknown[], sign: 1 | -1): unknown {
  if (!items.length) return new Undefined('max/min of an empty sequence');
  let best = items[0];
  for (const x of items.slice(1)) if (sign > 0 ? compare(x, best, '>') : compare(x, best, '<')) best = x;
  return best;
}

function replaceCount(s: string, from: string, to: string, count: number): string {
  charge(s.length);
  if (count < 0) {
    if (from === '') return s;
    const parts = s.split(from);
    allowChars(s.length + (parts.length - 1) * (to.length - from.length), 'the replaced text');
    return parts.join(to);
  }
  let out = s;
  let at = 0;
  for (let n = 0; n < count; n++) {
    const i = out.indexOf(from, at);
    if (i < 0) break;
    allowChars(out.length + to.length - from.length, 'the replaced text');
    out = out.slice(0, i) + to + out.slice(i + from.length);
    at = i + to.length;
  }
  return out;
}

function stripChars(s: string, chars: string, side: 'both' | 'left' | 'right'): string {
  let a = 0;
  let b = s.length;
  if (side !== 'right') while (a < b && chars.includes(s[a])) a++;
  if (side !== 'left') while (b > a && chars.includes(s[b - 1])) b--;
  return s.slice(a, b);
}

/** Python struct.unpack_from(format, bytes, offset)[0] for the common single-value formats. */
function unpack(value: unknown, format: string, offset: number): unknown {
  const buf = Buffer.isBuffer(value) ? value : typeof value === 'string' ? Buffer.from(value, 'utf8') : undefined;
  if (!buf) throw new RenderError(`unpack needs bytes, got ${typeName(value)}`);
  const m = /^([<>!=@]?)(\d*)([bBhHiIlLqQfd?xcs])$/.exec(format);
  if (!m) throw new RenderError(`unpack format '${format}' is not supported`);
  const little = m[1] === '<' || m[1] === '' || m[1] === '=' || m[1] === '@';
  const code = m[3];
  const size: Record<string, number> = { b: 1, B: 1, '?': 1, x: 1, c: 1, s: 1, h: 2, H: 2, i: 4, I: 4, l: 4, L: 4, f: 4, q: 8, Q: 8, d: 8 };
  if (offset < 0 || offset + size[code] > buf.length) throw new RenderError(`unpack needs ${size[code]} bytes at offset ${offset}, got ${buf.length}`);
  switch (code) {
    case 'b':
      return buf.readInt8(offset);
    case 'B':
      return buf.readUInt8(offset);
    case '?':
      return buf[offset] !== 0;
    case 'h':
      return little ? buf.readInt16LE(offset) : buf.readInt16BE(offset);
    case 'H':
      return little ? buf.readUInt16LE(offset) : buf.readUInt16BE(offset);
    case 'i':
    case 'l':
      return little ? buf.readInt32LE(offset) : buf.readInt32BE(offset);
    case 'I':
    case 'L':
      return little ? buf.readUInt32LE(offset) : buf.readUInt32BE(offset);
    case 'q':
      return Number(little ? buf.readBigInt64LE(offset) : buf.readBigInt64BE(offset));
    case 'Q':
      return Number(little ? buf.readBigUInt64LE(offset) : buf.readBigUInt64BE(offset));
    case 'f':
      return little ? buf.readFloatLE(offset) : buf.readFloatBE(offset);
    case 'd':
      return little ? buf.readDoubleLE(offset) : buf.readDoubleBE(offset);
    default:
      throw new RenderError(`unpack format '${format}' is not supported`);
  }
}

type Test = (value: unknown, args: unknown[]) => boolean;
const TESTS: Record<string, Test> = {
  defined: (v) => !isUndef(v),
  undefined: (v) => isUndef(v),
  none: (v) => v === null,
  number: (v) => typeof v === 'number',
  integer: (v) => typeof v === 'number' && Number.isInteger(v),
  float: (v) => typeof v === 'number' && !Number.isInteger(v),
  string: (v) => typeof v === 'string',
  mapping: (v) => isDict(v),
  sequence: (v) => typeof v === 'string' || Array.isArray(v) || isDict(v),
  iterable: (v) => typeof v === 'string' || Array.isArray(v) || isDict(v) || Buffer.isBuffer(v),
  list: (v) => Array.isArray(v),
  boolean: (v) => typeof v === 'boolean',
  true: (v) => v === true,
  false: (v) => v === false,
  even: (v) => typeof v === 'number' && v % 2 === 0,
  odd: (v) => typeof v === 'number' && Math.abs(v % 2) === 1,
  divisibleby: (v, a) => typeof v === 'number' && v % Number(a[0]) === 0,
  is_number: (v) => toFloat(v) !== undefined && Number.isFinite(toFloat(v)!),
  eq: (v, a) => pyEquals(v, a[0]),
  ne: (v, a) => !pyEquals(v, a[0]),
  lt: (v, a) => compare(v, a[0], '<'),
  le: (v, a) => compare(v, a[0], '<='),
  gt: (v, a) => compare(v, a[0], '>'),
  ge: (v, a) => compare(v, a[0], '>='),
  in: (v, a) => contains(a[0], v),
};
TESTS['=='] = TESTS.eq;
TESTS.equalto = TESTS.eq;
TESTS['!='] = TESTS.ne;
TESTS['<'] = TESTS.lt;
TESTS['<='] = TESTS.le;
TESTS['>'] = TESTS.gt;
TESTS['>='] = TESTS.ge;
TESTS.lessthan = TESTS.lt;
TESTS.greaterthan = TESTS.gt;

const FUNCTIONS: Record<string, (args: unknown[], kwargs: Record<string, unknown>) => unknown> = {
  float: (a, k) => FILTERS.float(a[0], a.slice(1), k),
  int: (a, k) => FILTERS.int(a[0], a.slice(1), k),
  bool: (a, k) => FILTERS.bool(a[0], a.slice(1), k),
  max: (a) => minMax(a.length === 1 ? iterate(a[0]) : a, 1),
  min: (a) => minMax(a.length === 1 ? iterate(a[0]) : a, -1),
  iif: (a) => iif(a[0], a.slice(1)),
  is_number: (a) => TESTS.is_number(a[0], []),
  range: (a) => {
    const nums = a.map((x) => toIntStrict(x));
    const [start, stop, step] = nums.length === 1 ? [0, nums[0], 1] : [nums[0], nums[1], nums[2] ?? 1];
    if (step === 0) throw new RenderError('range() step must not be zero');
    const out: number[] = [];
    for (let x = start; step > 0 ? x < stop : x > stop; x += step) {
      out.push(x);
      if (out.length > MAX_RANGE) throw new RenderError(`range() longer than ${MAX_RANGE}`);
    }
    charge(out.length);
    return out;
  },
  dict: (_a, k) => {
    const d: Dict = Object.create(null) as Dict;
    for (const [key, v] of Object.entries(k)) d[key] = v;
    return d;
  },
};

function contains(container: unknown, item: unknown): boolean {
  if (typeof container === 'string') {
    if (typeof item !== 'string') throw new RenderError(`'in <string>' requires string as left operand, not ${typeName(item)}`);
    charge(container.length);
    return container.includes(item);
  }
  if (Array.isArray(container)) return container.some((x) => pyEquals(x, item));
  if (isDict(container)) return own(container, dictKey(item));
  if (Buffer.isBuffer(container)) return typeof item === 'number' ? container.includes(item) : false;
  if (isUndef(container)) return false;
  throw new RenderError(`argument of type '${typeName(container)}' is not iterable`);
}

function callMethod(m: Method, args: unknown[]): unknown {
  const self = m.self;
  if (typeof self === 'string') {
    charge(self.length);
    switch (m.name) {
      case 'lower':
        return self.toLowerCase();
      case 'upper':
        return self.toUpperCase();
      case 'strip':
        return args.length && args[0] !== null ? stripChars(self, pyStr(args[0]), 'both') : self.trim();
      case 'lstrip':
        return args.length && args[0] !== null ? stripChars(self, pyStr(args[0]), 'left') : self.replace(/^\s+/, '');
      case 'rstrip':
        return args.length && args[0] !== null ? stripChars(self, pyStr(args[0]), 'right') : self.replace(/\s+$/, '');
      case 'split': {
        const sep = args.length && args[0] !== null ? pyStr(args[0]) : undefined;
        const max = args.length > 1 ? Number(args[1]) : -1;
        let parts = sep === undefined ? self.trim().split(/\s+/).filter(Boolean) : self.split(sep);
        allowItems(parts.length, 'the split');
        if (max >= 0 && parts.length > max + 1) parts = [...parts.slice(0, max), parts.slice(max).join(sep ?? ' ')];
        return parts;
      }
      case 'replace':
        return replaceCount(self, pyStr(args[0]), pyStr(args[1]), args.length > 2 ? Number(args[2]) : -1);
      case 'startswith':
        return (Array.isArray(args[0]) ? args[0] : [args[0]]).some((p) => self.startsWith(pyStr(p)));
      case 'endswith':
        return (Array.isArray(args[0]) ? args[0] : [args[0]]).some((p) => self.endsWith(pyStr(p)));
      case 'title':
        return FILTERS.title(self, [], {});
      case 'capitalize':
        return FILTERS.capitalize(self, [], {});
      case 'isdigit':
      case 'isnumeric':
        return /^\d+$/.test(self);
      case 'count':
        return pyStr(args[0]) === '' ? self.length + 1 : self.split(pyStr(args[0])).length - 1;
      case 'find':
        return self.indexOf(pyStr(args[0]));
      case 'join':
        return joinBounded(
          mapLazy(iterate(args[0]), (x) => pyStr(x)),
          self,
          'the joined text',
        );
    }
  } else if (isDict(self)) {
    switch (m.name) {
      case 'get': {
        const k = dictKey(args[0]);
        return own(self, k) ? self[k] : args.length > 1 ? args[1] : null;
      }
      case 'keys':
        return iterate(self);
      case 'values': {
        const keys = Object.keys(self);
        allowItems(keys.length, 'the values');
        return keys.map((k) => self[k]);
      }
      case 'items': {
        const keys = Object.keys(self);
        allowItems(keys.length * 2, 'the items');
        return keys.map((k) => [keyValue(k), self[k]]);
      }
    }
  } else if (Array.isArray(self)) {
    charge(self.length);
    switch (m.name) {
      case 'index': {
        const i = self.findIndex((x) => pyEquals(x, args[0]));
        if (i < 0) throw new RenderError(`${pyRepr(args[0])} is not in list`);
        return i;
      }
      case 'count':
        return self.filter((x) => pyEquals(x, args[0])).length;
    }
  }
  throw new RenderError(`'${typeName(self)}' object has no method '${m.name}'`);
}

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

class Scope {
  private vars = new Map<string, unknown>();
  constructor(
    private readonly parent: Scope | undefined,
    private readonly globals: Record<string, unknown>,
  ) {}
  get(name: string): unknown {
    if (this.vars.has(name)) return this.vars.get(name);
    if (this.parent) return this.parent.get(name);
    if (own(this.globals, name)) {
      const v = this.globals[name];
      return v === undefined ? new Undefined(`'${name}'`) : v;
    }
    if (own(FUNCTIONS, name)) return new Method(FUNCTIONS, name);
    return new Undefined(`'${name}'`);
  }
  set(name: string, value: unknown): void {
    this.vars.set(name, value);
  }
  child(): Scope {
    return new Scope(this, this.globals);
  }
}

class LoopControl {
  constructor(readonly kind: 'break' | 'continue') {}
}

class Evaluator {
  private steps = 0;
  get stepsTaken(): number {
    return this.steps;
  }
  private out: string[] = [];
  private size = 0;

  step(): void {
    if (++this.steps > MAX_STEPS) throw new RenderError('template took too many steps');
  }

  write(s: string): void {
    this.size += s.length;
    if (this.size > MAX_OUTPUT) throw new RenderError(`template output is over ${MAX_OUTPUT} characters`);
    this.out.push(s);
  }

  result(): string {
    return this.out.join('');
  }

  run(stmts: Stmt[], scope: Scope): void {
    for (const s of stmts) {
      this.step();
      switch (s.t) {
        case 'text':
          this.write(s.v);
          break;
        case 'out':
          this.write(pyStr(this.eval(s.e, scope)));
          break;
        case 'set':
          scope.set(s.name, this.eval(s.e, scope));
          break;
        case 'if': {
          const branch = s.branches.find((b) => truthy(this.eval(b.test, scope)));
          this.run(branch ? branch.body : s.orelse, scope);
          break;
        }
        case 'for': {
          const items = iterate(this.eval(s.iter, scope));
          if (!items.length) {
            this.run(s.orelse, scope);
            break;
          }
          const inner = scope.child();
          for (let i = 0; i < items.length; i++) {
            this.step();
            const item = items[i];
            if (s.targets.length === 1) inner.set(s.targets[0], item);
            else {
              const parts = iterate(item);
              if (parts.length !== s.targets.length) throw new RenderError(`cannot unpack ${parts.length} values into ${s.targets.length}`);
              for (const [j, t] of s.targets.entries()) inner.set(t, parts[j]);
            }
            inner.set('loop', new Loop(i, items.length));
            try {
              this.run(s.body, inner);
            } catch (err) {
              if (!(err instanceof LoopControl)) throw err;
              if (err.kind === 'break') break;
            }
          }
          break;
        }
        case 'break':
        case 'continue':
          throw new LoopControl(s.t);
      }
    }
  }

  eval(e: Expr, scope: Scope): unknown {
    this.step();
    switch (e.t) {
      case 'const':
        return e.v;
      case 'name':
        return scope.get(e.n);
      case 'list':
        return e.items.map((x) => this.eval(x, scope));
      case 'dict': {
        const d: Dict = Object.create(null) as Dict;
        for (const [k, v] of e.pairs) d[dictKey(this.eval(k, scope))] = this.eval(v, scope);
        return d;
      }
      case 'attr':
        return this.getattr(this.eval(e.obj, scope), e.name);
      case 'item':
        return this.getitem(this.eval(e.obj, scope), this.eval(e.key, scope));
      case 'slice': {
        const obj = this.eval(e.obj, scope);
        const num = (x?: Expr) => (x ? toIntStrict(this.eval(x, scope)) : undefined);
        const [start, stop, step] = [num(e.start), num(e.stop), num(e.step) ?? 1];
        if (step !== 1) throw new RenderError('slices with a step are not supported');
        if (typeof obj === 'string' || Array.isArray(obj) || Buffer.isBuffer(obj)) {
          const r = obj.slice(start ?? 0, stop);
          charge(r.length);
          return r;
        }
        throw new RenderError(`'${typeName(obj)}' object is not subscriptable`);
      }
      case 'call': {
        const fn = this.eval(e.fn, scope);
        const args = e.args.map((x) => this.eval(x, scope));
        const kwargs: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
        for (const [k, v] of e.kwargs) kwargs[k] = this.eval(v, scope);
        if (fn instanceof Method) {
          if (fn.self === FUNCTIONS) return FUNCTIONS[fn.name](args, kwargs);
          return callMethod(fn, args);
        }
        if (isUndef(fn)) throw new RenderError(`${fn.hint} is undefined`);
        throw new RenderError(`'${typeName(fn)}' object is not callable`);
      }
      case 'filter': {
        const value = this.eval(e.obj, scope);
        const args = e.args.map((x) => this.eval(x, scope));
        const kwargs: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
        for (const [k, v] of e.kwargs) kwargs[k] = this.eval(v, scope);
        return FILTERS[e.name](value, args, kwargs);
      }
      case 'test': {
        const value = this.eval(e.obj, scope);
        const r = TESTS[e.name](
          value,
          e.args.map((x) => this.eval(x, scope)),
        );
        return e.negate ? !r : r;
      }
      case 'unary': {
        const x = this.eval(e.x, scope);
        if (e.op === 'not') return !truthy(x);
        const n = typeof x === 'number' ? x : typeof x === 'boolean' ? Number(x) : undefined;
        if (n === undefined) throw new RenderError(`bad operand type for unary ${e.op}: '${typeName(x)}'`);
        return e.op === '-' ? -n : n;
      }
      case 'cond':
        return truthy(this.eval(e.test, scope)) ? this.eval(e.a, scope) : e.b ? this.eval(e.b, scope) : new Undefined('the else branch');
      case 'bin':
        return this.binary(e, scope);
    }
  }

  private binary(e: Extract<Expr, { t: 'bin' }>, scope: Scope): unknown {
    if (e.op === 'and') {
      const a = this.eval(e.a, scope);
      return truthy(a) ? this.eval(e.b, scope) : a;
    }
    if (e.op === 'or') {
      const a = this.eval(e.a, scope);
      return truthy(a) ? a : this.eval(e.b, scope);
    }
    const a = this.eval(e.a, scope);
    const b = this.eval(e.b, scope);
    switch (e.op) {
      case '==':
        return pyEquals(a, b);
      case '!=':
        return !pyEquals(a, b);
      case '<':
      case '<=':
      case '>':
      case '>=':
        return compare(a, b, e.op);
      case 'in':
        return contains(b, a);
      case 'not in':
        return !contains(b, a);
      case '~': {
        const [x, y] = [pyStr(a), pyStr(b)];
        allowChars(x.length + y.length, "the result of '~'");
        return x + y;
      }
    }
    const numA = typeof a === 'number' || typeof a === 'boolean' ? Number(a) : undefined;
    const numB = typeof b === 'number' || typeof b === 'boolean' ? Number(b) : undefined;
    if (e.op === '+') {
      if (numA !== undefined && numB !== undefined) return numA + numB;
      if (typeof a === 'string' && typeof b === 'string') {
        allowChars(a.length + b.length, "the result of '+'");
        return a + b;
      }
      if (Array.isArray(a) && Array.isArray(b)) {
        allowItems(a.length + b.length, "the result of '+'");
        return [...a, ...b];
      }
    } else if (e.op === '*' && ((typeof a === 'string' && numB !== undefined) || (Array.isArray(a) && numB !== undefined))) {
      const times = Math.max(0, Math.trunc(numB!));
      if (typeof a === 'string') allowChars(times * a.length, "the result of '*'");
      else allowItems(times * length(a), "the result of '*'");
      return typeof a === 'string' ? a.repeat(Math.max(0, numB!)) : Array.from({ length: Math.max(0, numB!) }, () => a).flat();
    } else if (numA !== undefined && numB !== undefined) {
      switch (e.op) {
        case '-':
          return numA - numB;
        case '*':
          return numA * numB;
        case '/':
          if (numB === 0) throw new RenderError('division by zero');
          return numA / numB;
        case '//':
          if (numB === 0) throw new RenderError('integer division by zero');
          return Math.floor(numA / numB);
        case '%':
          if (numB === 0) throw new RenderError('modulo by zero');
          return ((numA % numB) + numB) % numB;
        case '**':
          return numA ** numB;
      }
    }
    throw new RenderError(`unsupported operand types for ${e.op}: '${typeName(a)}' and '${typeName(b)}'`);
  }

  private getattr(obj: unknown, name: string): unknown {
    if (isUndef(obj)) throw new RenderError(`cannot read '${name}' of an undefined value (${obj.hint})`);
    if (obj instanceof Loop) {
      switch (name) {
        case 'index':
          return obj.index0 + 1;
        case 'index0':
          return obj.index0;
        case 'first':
          return obj.index0 === 0;
        case 'last':
          return obj.index0 === obj.length - 1;
        case 'length':
          return obj.length;
        case 'revindex':
          return obj.length - obj.index0;
        case 'revindex0':
          return obj.length - obj.index0 - 1;
      }
      return new Undefined(`loop.${name}`);
    }
    if (isDict(obj)) {
      if (DICT_METHODS.has(name)) return new Method(obj, name);
      return own(obj, name) ? obj[name] : new Undefined(`'dict object' has no attribute '${name}'`);
    }
    if (typeof obj === 'string' && STR_METHODS.has(name)) return new Method(obj, name);
    if (Array.isArray(obj) && LIST_METHODS.has(name)) return new Method(obj, name);
    return new Undefined(`'${typeName(obj)} object' has no attribute '${name}'`);
  }

  private getitem(obj: unknown, key: unknown): unknown {
    if (isUndef(obj)) throw new RenderError(`cannot index an undefined value (${obj.hint})`);
    if (Array.isArray(obj) || typeof obj === 'string' || Buffer.isBuffer(obj)) {
      if (typeof key === 'number' && Number.isInteger(key)) {
        const i = key < 0 ? obj.length + key : key;
        if (i >= 0 && i < obj.length) return Buffer.isBuffer(obj) ? obj[i] : (obj as ArrayLike<unknown>)[i];
        return new Undefined(`index ${key} out of range`);
      }
      if (typeof key === 'string') return this.getattr(obj, key);
      return new Undefined(`index ${pyRepr(key)}`);
    }
    if (isDict(obj)) {
      const k = dictKey(key);
      if (own(obj, k)) return obj[k];
      return typeof key === 'string' ? this.getattr(obj, key) : new Undefined(`'dict object' has no attribute ${pyRepr(key)}`);
    }
    return new Undefined(`'${typeName(obj)} object' has no item ${pyRepr(key)}`);
  }
}

// ---------------------------------------------------------------------------
// Public surface
// ---------------------------------------------------------------------------

export type SimpleForm = { kind: 'value' } | { kind: 'path'; path: string } | { kind: 'constant'; text: string };

export interface CompiledTemplate {
  readonly source: string;
  /** Variables the template reads (value, value_json, ...). */
  readonly variables: ReadonlySet<string>;
  /** `{{ value }}`, `{{ value_json.a['b'] }}` (as a JSON path), or constant text. */
  readonly simple?: SimpleForm;
  /** Render to text, as Jinja does (not stripped). Throws RenderError. */
  render(vars: Record<string, unknown>): string;
}

const PATH_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function simpleForm(stmts: Stmt[]): SimpleForm | undefined {
  const meaningful = stmts.filter((s) => !(s.t === 'text' && s.v.trim() === ''));
  if (meaningful.every((s) => s.t === 'text')) return { kind: 'constant', text: stmts.map((s) => (s as { v: string }).v).join('') };
  if (meaningful.length !== 1 || meaningful[0].t !== 'out') return undefined;
  let e = meaningful[0].e;
  if (e.t === 'const' && typeof e.v === 'string') return { kind: 'constant', text: e.v };
  const segments: Array<string | number> = [];
  while (e.t === 'attr' || e.t === 'item') {
    if (e.t === 'attr') {
      if (DICT_METHODS.has(e.name)) return undefined;
      segments.unshift(e.name);
    } else {
      if (e.key.t !== 'const') return undefined;
      const k = e.key.v;
      if (typeof k === 'number' && Number.isInteger(k) && k >= 0) segments.unshift(k);
      else if (typeof k === 'string') segments.unshift(k);
      else return undefined;
    }
    e = e.obj;
  }
  if (e.t !== 'name') return undefined;
  if (e.n === 'value' && segments.length === 0) return { kind: 'value' };
  if (e.n !== 'value_json' || segments.length === 0) return undefined;
  let path = '';
  for (const seg of segments) {
    if (typeof seg === 'number') path += `[${seg}]`;
    else if (PATH_NAME.test(seg)) path += path ? `.${seg}` : seg;
    else if (!/['"\]]/.test(seg)) path += `['${seg}']`;
    else return undefined;
  }
  return { kind: 'path', path };
}

const cache = new Map<string, CompiledTemplate | TemplateError>();

/** Compile once (cached by source). Throws TemplateError for syntax it does not know. */
export function compileTemplate(source: string): CompiledTemplate {
  const hit = cache.get(source);
  if (hit instanceof TemplateError) throw hit;
  if (hit) return hit;
  let compiled: CompiledTemplate | TemplateError;
  try {
    if (source.length > MAX_TEMPLATE_CHARS) throw new TemplateError(`template is over ${MAX_TEMPLATE_CHARS} characters`);
    const names = new Set<string>();
    const stmts = parseStatements(lex(source), names);
    compiled = {
      source,
      variables: names,
      simple: simpleForm(stmts),
      render(vars: Record<string, unknown>): string {
        const ev = new Evaluator();
        const outer = work;
        work = { used: 0 };
        try {
          ev.run(stmts, new Scope(undefined, vars));
        } catch (err) {
          if (err instanceof RenderError) throw err;
          if (err instanceof LoopControl) throw new RenderError(`{% ${err.kind} %} outside a loop`);
          if (err instanceof RangeError)
            throw new RenderError(/string length/i.test(err.message) ? 'template made a string too long' : 'template is nested too deeply');
          throw new RenderError((err as Error).message);
        } finally {
          lastCost = (work?.used ?? 0) + ev.stepsTaken;
          work = outer;
        }
        return ev.result();
      },
    };
  } catch (err) {
    compiled = err instanceof TemplateError ? err : new TemplateError((err as Error).message);
  }
  if (cache.size > 2000) cache.clear();
  cache.set(source, compiled);
  if (compiled instanceof TemplateError) throw compiled;
  return compiled;
}

/** Render and strip, as Home Assistant's template.async_render does. */
export function renderStripped(template: CompiledTemplate, vars: Record<string, unknown>): string {
  return template.render(vars).trim();
}
