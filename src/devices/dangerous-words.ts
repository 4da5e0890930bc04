// The payload words that make a command dangerous, and the kind whose rules
// cover them. A device says what it is, and nothing checks that: a "light"
// whose on-payload is UNLOCK unlocks whatever listens. So an entity whose
// command payloads hold another kind's dangerous word is held to that kind
// (a light with UNLOCK is treated as a lock: the rules for lights do not let
// it act, and unlocking needs a person), and a command whose payload carries
// such a word is taken as that word's action (unlock, open, disarm), whatever
// the tool called it. Consumers (the pipeline, the transport gate) turn this
// into policy requests; this file knows devices only.
import { jsonDepth, MAX_JSON_DEPTH } from '../util/bounded-json.js';
import type { Entity, EntityKind } from './model.js';

export interface DangerousWord {
  /** Upper case; matched case-insensitively, as a whole payload, a JSON string value or a JSON object key. */
  word: string;
  /** The kind (and device class) whose rules a foreign entity sending it is held to. */
  kind: EntityKind;
  deviceClass?: string;
  /** The action it stands for in that kind. */
  action: string;
  /** Kinds for which the word is their own vocabulary. */
  home: readonly EntityKind[];
}

export const DANGEROUS_WORDS: readonly DangerousWord[] = [
  { word: 'UNLOCK', kind: 'lock', action: 'unlock', home: ['lock'] },
  { word: 'UNLATCH', kind: 'lock', action: 'unlock', home: ['lock'] },
  // Garage doors, doors and gates: the strictest cover there is.
  { word: 'OPEN', kind: 'cover', deviceClass: 'garage', action: 'open', home: ['cover', 'valve', 'lock'] },
  { word: 'DISARM', kind: 'alarm_control_panel', action: 'disarm', home: ['alarm_control_panel'] },
];

const BY_WORD = new Map(DANGEROUS_WORDS.map((w) => [w.word, w]));
/**
 * The longest payload Hearth judges, and so the longest it sends: every byte that is published is searched,
 * and a longer one is refused, never passed. A rendered command template is bounded by the same number
 * (templates.ts), so nothing a device's template makes can be too long to judge.
 */
export const MAX_JUDGED_CHARS = 256 * 1024;
/** The deepest JSON payload searched: a deeper one is refused, as a longer one is. */
export const MAX_JUDGED_DEPTH = MAX_JSON_DEPTH;
const LONGEST_WORD = Math.max(...DANGEROUS_WORDS.map((w) => w.word.length));

function wordOf(text: string): DangerousWord | undefined {
  const t = text.trim();
  if (t.length > LONGEST_WORD + 2) return undefined;
  return BY_WORD.get(t.replace(/^"(.*)"$/, '$1').toUpperCase());
}

/**
 * The first dangerous word among the strings of a JSON value, its object keys included (depth already checked):
 * a device that reads `{"UNLOCK": 1}` as an unlock is as real as one that reads `{"state": "UNLOCK"}`.
 */
function wordInJson(value: unknown): DangerousWord | undefined {
  if (typeof value === 'string') return wordOf(value);
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (const v of value) {
      const found = wordInJson(v);
      if (found) return found;
    }
    return undefined;
  }
  for (const [k, v] of Object.entries(value)) {
    const found = wordOf(k) ?? wordInJson(v);
    if (found) return found;
  }
  return undefined;
}

/** Any dangerous word standing alone in text that looks like JSON and is not (a lenient device parser may still read it). */
function wordAmongTokens(text: string): DangerousWord | undefined {
  for (const token of text.match(/[A-Za-z]+/g) ?? []) {
    const found = token.length <= LONGEST_WORD ? BY_WORD.get(token.toUpperCase()) : undefined;
    if (found) return found;
  }
  return undefined;
}

/** What a payload says: the dangerous word it carries (if any), or why it cannot be judged (then it is not sent). */
export type PayloadJudgement = { word?: DangerousWord; unjudgeable?: undefined } | { word?: undefined; unjudgeable: string };

/** Judge a whole payload: as a word, as JSON string values, or (JSON-like text that does not parse) word by word. */
export function judgePayload(payload: string): PayloadJudgement {
  if (payload.length > MAX_JUDGED_CHARS) {
    return { unjudgeable: `the payload is ${payload.length} characters, over the ${MAX_JUDGED_CHARS} Hearth judges for dangerous words` };
  }
  const whole = wordOf(payload);
  if (whole || !/^\s*[[{]/.test(payload)) return { word: whole };
  if (jsonDepth(payload, MAX_JUDGED_DEPTH) > MAX_JUDGED_DEPTH) {
    return { unjudgeable: `the payload nests deeper than ${MAX_JUDGED_DEPTH} levels, too deep to judge for dangerous words` };
  }
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return { word: wordAmongTokens(payload) };
  }
  return { word: wordInJson(value) };
}

/** The dangerous word a payload carries (undefined for one that cannot be judged: ask judgePayload). */
export function dangerousWordIn(payload: string): DangerousWord | undefined {
  return judgePayload(payload).word;
}

/** The words an entity may send: its payload vocabulary and its options. */
function vocabulary(entity: Entity): string[] {
  return [...Object.values(entity.payloads), ...Object.values(entity.options).flat()];
}

/** The kind whose rules this entity is held to, when its vocabulary holds another kind's dangerous word. */
export function stricterKindOf(entity: Entity): DangerousWord | undefined {
  for (const text of vocabulary(entity)) {
    const word = dangerousWordIn(String(text));
    if (word && !word.home.includes(entity.kind)) return word;
  }
  return undefined;
}

export interface HeldTo {
  kind: EntityKind;
  deviceClass?: string;
  /** The action a dangerous word in the payloads stands for (undefined: the command's own). */
  action?: string;
  /** The word that decided it, for messages. */
  word?: string;
  /** Why a payload cannot be judged: the command is refused, never sent. */
  unjudgeable?: string;
}

/**
 * The kind, device class and action one command is to be judged as, from the
 * entity and the payloads it would send: its own, unless a dangerous word
 * says otherwise.
 */
export function heldTo(entity: Entity, payloads: readonly string[] = []): HeldTo {
  const own: HeldTo = { kind: entity.kind, ...(entity.deviceClass ? { deviceClass: entity.deviceClass } : {}) };
  const stricter = stricterKindOf(entity);
  const base: HeldTo = stricter ? { kind: stricter.kind, ...(stricter.deviceClass ? { deviceClass: stricter.deviceClass } : {}), word: stricter.word } : own;
  for (const payload of payloads) {
    const { word, unjudgeable } = judgePayload(payload);
    if (unjudgeable) return { ...base, unjudgeable };
    if (!word) continue;
    if (word.home.includes(entity.kind)) return { ...own, action: word.action, word: word.word };
    return { kind: word.kind, ...(word.deviceClass ? { deviceClass: word.deviceClass } : {}), action: word.action, word: word.word };
  }
  return base;
}
