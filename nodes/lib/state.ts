// The controllers behind hearth-state (fire on state changes) and
// hearth-current-state (branch on an entity's state now). Both read through a
// StateFeed that shows a principal only what the one read check lets it read:
// an embedded Hearth asks Hearth.readDenied per event; a daemon's event stream
// is already filtered for the token's principal. No Node-RED in here.
import { compileGlob, type Matcher } from '../../dist/policy/glob.js';

/** One entity's state, the shape `hearth devices --json`, GET /api/devices and the event stream use. */
export interface StateJson {
  id: string;
  kind: string;
  name: string;
  area: string | null;
  unit?: string | null;
  deviceClass?: string | null;
  value: unknown;
  attributes: Record<string, unknown>;
  available: boolean | null;
  /** ISO time the value or an attribute last arrived, or null. */
  updatedAt: string | null;
  [key: string]: unknown;
}

/** What the state nodes read: the principal's visible entities, their states now, and changes as they come. */
export interface StateFeed {
  /** Every entity the principal may read, with its state now. */
  snapshot(): Promise<StateJson[]>;
  /** Changes of entities the principal may read; returns the unsubscribe. */
  subscribe(fn: (state: StateJson) => void): () => void;
}

/** A timer source, so the "for N seconds" rule can be driven in a unit test. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_CLOCK: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface Selector {
  /** Entity id glob(s), `|` between alternatives: `front_door.*|hall_*`. Empty: any. */
  entity?: string;
  /** Area glob: `hall|kitchen`. Empty: any. */
  area?: string;
  /** Kind glob: `light|switch`. Empty: any. */
  kind?: string;
}

/** Does this entity match the selector's globs? */
export function selects(sel: Selector): (s: Pick<StateJson, 'id' | 'area' | 'kind'>) => boolean {
  const glob = (p: string | undefined): Matcher | undefined => (p?.trim() ? compileGlob(p.trim(), true) : undefined);
  const entity = glob(sel.entity);
  const area = glob(sel.area);
  const kind = glob(sel.kind);
  return (s) => (!entity || entity(s.id)) && (!area || (s.area !== null && area(s.area))) && (!kind || kind(s.kind));
}

/** A value as the filters compare it: the word it is (`on`, `21.5`, `true`). */
export function valueWord(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** `on|open` style value filter: case-insensitive words with globs. Empty: any. */
function valueFilter(p: string | undefined): Matcher | undefined {
  return p?.trim() ? compileGlob(p.trim(), true) : undefined;
}

function unavailable(s: Pick<StateJson, 'available' | 'value'> | undefined): boolean {
  return !!s && (s.available === false || s.value === 'unavailable');
}

export interface TriggerSettings extends Selector {
  /** Fire only when the new value matches (`on`, `on|open`, `unlock*`). */
  to?: string;
  /** Fire only when the old value matched. */
  from?: string;
  /** Fire only once the new value has held this long (0: at once). */
  forMs?: number;
  /** Skip changes to or from unavailable. */
  ignoreUnavailable?: boolean;
  /** Also fire for each matching entity's state as it is when the node starts. */
  outputInitially?: boolean;
}

/** What a trigger fires with. */
export interface StateChange {
  entity: { id: string; name: string; kind: string; area: string | null; unit: string | null };
  newState: StateJson;
  /** The state before the change (null: first heard). */
  oldState: StateJson | null;
  /** ms since the change happened (about forMs when a `for` rule held it back). */
  ageMs: number;
  /** ms the old value had held (null: unknown). */
  oldForMs: number | null;
  /** true for the initial output of outputInitially. */
  initial: boolean;
}

interface Known {
  state: StateJson;
  /** When this value was first seen (epoch ms), for oldForMs. */
  since: number | null;
}

/**
 * Fires on value or availability changes of the selected entities (attribute
 * updates alone do not fire; an event's every occurrence does), filtered by
 * from/to, unavailability and `for`.
 */
export class StateTrigger {
  private readonly known = new Map<string, Known>();
  private readonly pending = new Map<string, unknown>();
  private unsubscribe?: () => void;
  private stopped = false;
  private readonly accept: ReturnType<typeof selects>;
  private readonly to?: Matcher;
  private readonly from?: Matcher;

  constructor(
    private readonly settings: TriggerSettings,
    private readonly fire: (change: StateChange) => void,
    private readonly clock: Clock = REAL_CLOCK,
  ) {
    this.accept = selects(settings);
    this.to = valueFilter(settings.to);
    this.from = valueFilter(settings.from);
  }

  /** Start from the feed's snapshot (so the first change has an old state), then follow its changes. */
  async start(feed: StateFeed): Promise<void> {
    // Subscribe first and hold what arrives during the snapshot: it is compared with the snapshot afterwards,
    // so a change in that moment still fires (or is seen as no change when the snapshot already has it).
    const early: StateJson[] = [];
    let snapshotting = true;
    this.unsubscribe = feed.subscribe((s) => (snapshotting ? early.push(s) : this.onState(s)));
    let snapshot: StateJson[];
    try {
      snapshot = await feed.snapshot();
    } finally {
      snapshotting = false;
    }
    for (const s of snapshot) {
      if (this.stopped || !this.accept(s) || this.known.has(s.id)) continue;
      this.known.set(s.id, { state: s, since: s.updatedAt ? Date.parse(s.updatedAt) : null });
      if (this.settings.outputInitially && s.value !== null && this.passes(null, s)) {
        this.fire({ entity: entityOf(s), newState: s, oldState: null, ageMs: 0, oldForMs: null, initial: true });
      }
    }
    for (const s of early) this.onState(s);
  }

  /** How many entities this trigger follows now. */
  get following(): number {
    return this.known.size;
  }

  private passes(old: StateJson | null, s: StateJson): boolean {
    if (this.settings.ignoreUnavailable && (unavailable(s) || unavailable(old ?? undefined))) return false;
    if (this.to && !this.to(valueWord(s.value))) return false;
    if (this.from && !(old && this.from(valueWord(old.value)))) return false;
    return true;
  }

  private onState(s: StateJson): void {
    if (this.stopped || !this.accept(s)) return;
    const now = this.clock.now();
    const before = this.known.get(s.id);
    this.known.set(s.id, { state: s, since: before && sameValue(before.state, s) ? before.since : now });
    // First heard: nothing to compare with, but an event (discovered after this trigger started) is an occurrence.
    if (!before && !occurrence(s)) return;
    if (before && sameValue(before.state, s)) return; // an attribute changed, not the state
    // Any new value ends a wait for the old one to hold.
    const waiting = this.pending.get(s.id);
    if (waiting !== undefined) {
      this.clock.clearTimeout(waiting);
      this.pending.delete(s.id);
    }
    if (!this.passes(before?.state ?? null, s)) return;
    const change = (ageMs: number): StateChange => ({
      entity: entityOf(s),
      newState: s,
      oldState: before?.state ?? null,
      ageMs,
      oldForMs: before?.since == null ? null : now - before.since,
      initial: false,
    });
    const forMs = this.settings.forMs ?? 0;
    if (forMs <= 0) {
      this.fire(change(0));
      return;
    }
    const handle = this.clock.setTimeout(() => {
      this.pending.delete(s.id);
      if (!this.stopped) this.fire(change(this.clock.now() - now));
    }, forMs);
    this.pending.set(s.id, handle);
  }

  /** How many changes wait for their `for` time. */
  get waiting(): number {
    return this.pending.size;
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    for (const h of this.pending.values()) this.clock.clearTimeout(h);
    this.pending.clear();
  }
}

/**
 * An event is an occurrence each time it is reported (the doorbell rang again: press, then press), not a
 * state that stayed the same; a retained one redelivered on a reconnect is not a new occurrence.
 */
function occurrence(s: StateJson): boolean {
  return s.kind === 'event' && s.retained !== true && s.value !== null && s.value !== undefined;
}

function sameValue(a: StateJson, b: StateJson): boolean {
  if (occurrence(b) && b.updatedAt !== a.updatedAt) return false;
  return valueWord(a.value) === valueWord(b.value) && a.available === b.available;
}

function entityOf(s: StateJson): StateChange['entity'] {
  return { id: s.id, name: s.name, kind: s.kind, area: s.area ?? null, unit: s.unit ?? null };
}

export type Comparison = 'is' | 'is_not' | 'above' | 'below';
export const COMPARISONS: readonly Comparison[] = ['is', 'is_not', 'above', 'below'];

/**
 * The condition of hearth-current-state: `is`/`is_not` compare words
 * (case-insensitive, globs and `|` alternatives allowed); `above`/`below`
 * compare numbers (a value that is not a number satisfies neither).
 */
export function condition(op: Comparison, expected: string): (value: unknown) => boolean {
  switch (op) {
    case 'is':
    case 'is_not': {
      const m = compileGlob(expected.trim(), true);
      return op === 'is' ? (v) => m(valueWord(v)) : (v) => !m(valueWord(v));
    }
    case 'above':
    case 'below': {
      const limit = Number(expected);
      if (expected.trim() === '' || !Number.isFinite(limit)) throw new Error(`"${op}" needs a number to compare with, got ${JSON.stringify(expected)}`);
      return (v) => {
        const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
        return Number.isFinite(n) && (op === 'above' ? n > limit : n < limit);
      };
    }
  }
}

/** The state of one entity now, or a clear error: unknown, or not readable by this principal (the same answer). */
export async function currentState(feed: StateFeed, entityId: string): Promise<StateJson> {
  const s = (await feed.snapshot()).find((e) => e.id === entityId);
  if (!s) throw new Error(`no entity ${JSON.stringify(entityId)} this node may read; hearth devices lists them`);
  return s;
}
