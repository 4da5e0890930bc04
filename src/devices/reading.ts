// How an entity's state is read, comparably: what the state cache asks when a source re-publishes an entity (a
// Home Assistant config with a corrected value_template, a Zigbee2MQTT list, a device file edited), so that a
// reading that changed is read again from the broker's retained copy and one that did not is left alone.
//
// A transform is a closure, and two closures never compare equal: where one is made, the source says what it reads
// (`readsAs`: the template text, the JSON path, the payload words), and two transforms with the same text read
// alike. A transform that says nothing cannot be compared, and counts as unchanged (what Hearth did before it
// compared readings at all): a reading is only ever read again because a source said it changed.
import { VOCABULARY_KINDS } from './decode.js';
import { type Availability, type Entity, FRAME_KINDS, type PayloadTransform } from './model.js';

/**
 * What each transform reads, by the transform. A WeakMap rather than a field of the function: nothing to change in
 * the model's types, and the entry goes with its transform.
 */
const READS = new WeakMap<PayloadTransform, string>();

/**
 * Say what `transform` reads: a text equal for two transforms that read every payload alike (`template <source>`,
 * `on/off ["occupancy",true,false]`), and different for two that may not. Returns the transform.
 */
export function readsAs<T extends PayloadTransform>(transform: T, reads: string): T {
  READS.set(transform, reads);
  return transform;
}

/** What a transform reads, when its source said (readsAs); undefined: it cannot be compared. */
export function readsOf(transform: PayloadTransform): string | undefined {
  return READS.get(transform);
}

/** Whether two readings' transforms read alike: the same one, or both saying the same; one that says nothing reads alike. */
export function sameTransform(a: PayloadTransform | undefined, b: PayloadTransform | undefined): boolean {
  if (a === b) return true;
  // One reads through a transform, the other by its path: not the same reading.
  if (!a || !b) return false;
  const was = READS.get(a);
  if (was === undefined) return true;
  const now = READS.get(b);
  return now === undefined || now === was;
}

/**
 * How one reading of an entity changed: `changed`, it is read another way (another path or template, words that
 * mean something else), or no longer read: what it read the old way no longer stands, and it is read again.
 * `moved`, it is read the same way from another topic (a device renamed in Zigbee2MQTT): what it read stands, and it
 * is read from the broker's copy there too. `added`, it is read where nothing was read before (a new attribute, a
 * new entity): nothing to forget, read from the broker's copy.
 */
export type ReadingChange = 'changed' | 'moved' | 'added';

/**
 * What one pass of comparisons remembers (StateCache.prepare, setDevices): the last two availabilities compared,
 * and the answer. A device's entities share one (a Zigbee2MQTT device's five), so a list converted again compares
 * each device's once. Made for a pass and dropped with it: nothing kept between passes.
 */
export interface ComparisonMemo {
  before?: Availability;
  after?: Availability;
  change?: ReadingChange;
}

/** What of an entity is read otherwise now (readingChanges). */
export interface ReadingChanges {
  /** The main value (or a camera's frame). */
  value?: ReadingChange;
  /** Attributes, by name; one no longer read at all is `changed` (what it read goes). */
  attributes?: Record<string, ReadingChange>;
  availability?: ReadingChange;
}

/** Everything of an entity new to the cache: read where it can be, nothing to forget. */
export function newReadings(entity: Entity): ReadingChanges {
  const attributes: Record<string, ReadingChange> = {};
  for (const name in entity.attributes) attributes[name] = 'added';
  return { value: 'added', attributes, ...(entity.availability ? { availability: 'added' as const } : {}) };
}

/**
 * What of `after` is read otherwise than `before` (the same entity, as its source gave it before and now): the topic,
 * the path or transform, and what decides what a payload means (decode.ts: the kind, the vocabulary, a select's
 * options, an event's types, a frame's encoding; availability's words and mode). Undefined when nothing is: the
 * answer for every entity of a source that re-published what it had, so it allocates nothing then.
 */
export function readingChanges(before: Entity, after: Entity, memo: ComparisonMemo = {}): ReadingChanges | undefined {
  const kind = before.kind !== after.kind;
  const value = kind ? 'changed' : valueChange(before, after);
  let attributes: Record<string, ReadingChange> | undefined;
  if (before.attributes !== after.attributes || kind || before.stateTopic !== after.stateTopic) {
    for (const name in after.attributes) {
      const a = Object.hasOwn(before.attributes, name) ? before.attributes[name] : undefined;
      const b = after.attributes[name]!;
      // An attribute without a topic of its own is read on the entity's state topic.
      const change: ReadingChange | undefined =
        kind || (a && (a.path !== b.path || !sameTransform(a.transform, b.transform)))
          ? 'changed'
          : !a
            ? 'added'
            : (a.topic ?? before.stateTopic) !== (b.topic ?? after.stateTopic)
              ? 'moved'
              : undefined;
      if (change) (attributes ??= {})[name] = change;
    }
    for (const name in before.attributes) if (!Object.hasOwn(after.attributes, name)) (attributes ??= {})[name] = 'changed';
  }
  const availability = availabilityChange(before.availability, after.availability, memo);
  if (!value && !attributes && !availability) return undefined;
  return { value, attributes, availability };
}

/** How the main value (or a frame) of two entities of one kind is read otherwise, if it is. */
function valueChange(a: Entity, b: Entity): ReadingChange | undefined {
  if (a.valuePath !== b.valuePath || !sameTransform(a.transform, b.transform)) return 'changed';
  if (FRAME_KINDS.has(b.kind)) {
    if (a.imageEncoding !== b.imageEncoding) return 'changed';
  } else if ((VOCABULARY_KINDS.has(b.kind) || b.kind === 'device_tracker') && !sameWords(a.states, b.states)) return 'changed';
  else if (b.kind === 'select' && !sameList(a.options.value, b.options.value)) return 'changed';
  else if (b.kind === 'event' && !sameList(a.options.event_type, b.options.event_type)) return 'changed';
  if (a.stateTopic === b.stateTopic) return undefined;
  // No longer read at all: what it read goes with its reading.
  if (b.stateTopic === undefined) return 'changed';
  return a.stateTopic === undefined ? 'added' : 'moved';
}

/**
 * How availability is read otherwise, if it is: `moved` when only its topics changed. Availability added or dropped
 * is `changed`: without any an entity is available, with some unknown until a source speaks.
 */
function availabilityChange(a: Availability | undefined, b: Availability | undefined, memo: ComparisonMemo): ReadingChange | undefined {
  if (a === b) return undefined;
  if (a !== memo.before || b !== memo.after) {
    memo.change = comparedAvailability(a, b);
    memo.before = a;
    memo.after = b;
  }
  return memo.change;
}

function comparedAvailability(a: Availability | undefined, b: Availability | undefined): ReadingChange | undefined {
  if (!a || !b || a.mode !== b.mode || a.sources.length !== b.sources.length) return 'changed';
  let moved = false;
  for (let i = 0; i < a.sources.length; i++) {
    const x = a.sources[i]!;
    const y = b.sources[i]!;
    if (x === y) continue;
    if (
      x.path !== y.path ||
      x.payloadAvailable !== y.payloadAvailable ||
      x.payloadNotAvailable !== y.payloadNotAvailable ||
      !sameTransform(x.transform, y.transform)
    )
      return 'changed';
    if (x.topic !== y.topic) moved = true;
  }
  return moved ? 'moved' : undefined;
}

function sameWords(a: Record<string, string>, b: Record<string, string>): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in b) {
    if (a[k] !== b[k]) return false;
    n++;
  }
  for (const _ in a) n--;
  return n === 0;
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
