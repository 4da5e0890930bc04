// The payload words that make a command dangerous, and the kind whose rules
// cover them. A device says what it is, and nothing checks that: a "light"
// whose on-payload is UNLOCK unlocks whatever listens. So an entity whose
// command payloads hold another kind's dangerous word is held to that kind
// (a light with UNLOCK is treated as a lock: the rules for lights do not let
// it act, and unlocking needs a person), and a command whose payload carries
// such a word is taken as that word's action (unlock, open, disarm), whatever
// the tool called it. Consumers (the pipeline, the transport gate) turn this
// into policy requests; this file knows devices only.
import type { Entity, EntityKind } from './model.js';

export interface DangerousWord {
  /** Upper case; matched case-insensitively, as a whole payload or a JSON string value. */
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
/** Larger payloads are not searched word by word (no command of a stricter kind is that long; their words are short). */
const MAX_SEARCHED = 16 * 1024;
const MAX_DEPTH = 8;

function wordOf(text: string): DangerousWord | undefined {
  const t = text.trim();
  if (t.length > 16) return undefined;
  return BY_WORD.get(t.replace(/^"(.*)"$/, '$1').toUpperCase());
}

/** The first dangerous word among the string values of a JSON value (bounded depth). */
function wordInJson(value: unknown, depth: number): DangerousWord | undefined {
  if (typeof value === 'string') return wordOf(value);
  if (depth >= MAX_DEPTH || value === null || typeof value !== 'object') return undefined;
  for (const v of Array.isArray(value) ? value : Object.values(value)) {
    const found = wordInJson(v, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** The dangerous word a payload carries: the whole payload, or a string in a JSON payload. */
export function dangerousWordIn(payload: string): DangerousWord | undefined {
  const whole = wordOf(payload);
  if (whole || payload.length > MAX_SEARCHED || !/^\s*[[{]/.test(payload)) return whole;
  try {
    return wordInJson(JSON.parse(payload), 0);
  } catch {
    return undefined;
  }
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
    const word = dangerousWordIn(payload);
    if (!word) continue;
    if (word.home.includes(entity.kind)) return { ...own, action: word.action, word: word.word };
    return { kind: word.kind, ...(word.deviceClass ? { deviceClass: word.deviceClass } : {}), action: word.action, word: word.word };
  }
  return base;
}
