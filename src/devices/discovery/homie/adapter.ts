// The Homie discovery adapter: Homie 4 (and 3) devices from their retained
// attribute topics, Homie 5 devices from `<prefix>/5/<id>/$description`.
// Attribute messages come in bursts (every retained topic of a device at
// once), so the devices they touch are rebuilt once a burst: `settleMs` (100 ms)
// after its first message, not pushed back by later ones (a device that never
// stops publishing is still described); what comes after makes a rebuild of its
// own, and a Homie 4 property waits for its $datatype (v4.ts); one still without it DATATYPE_GRACE_MS after its
// device said it is ready gets a warning, once (warnDatatypes). `$state` is each
// device's availability (device.ts); an emptied `$state` (Homie 5), or
// emptied `$homie` and `$state` (Homie 4), removes the device. Lines about what was skipped are bounded across
// topics (util/line-budget.ts): thousands of bad devices give a few lines and a summary with the count.
import { discoveryPrefix, type HearthConfig } from '../../../config/schema.js';
import { LineTrickle, quietKeys } from '../../../util/line-budget.js';
import { PerKeyThrottle } from '../../../util/per-key-throttle.js';
import { admitDiscovered } from '../../discovered.js';
import type { Device } from '../../model.js';
import { listSignature, MAX_ENTITIES_PER_DEVICE, SOURCE_PRIORITY, type DiscoveryAdapter, type DiscoveryContext } from '../adapter.js';
import { groupSkips, type Skip } from '../zigbee2mqtt/skips.js';
import { homieToDevice, type ConvertedHomie } from './device.js';
import { HomieLimitError, HomieV4Tree, MAX_V4_DEVICES, v4Filters } from './v4.js';
import { READY_STATES } from './types.js';
import { MAX_DESCRIPTION_BYTES, parseDescription, v5Filters } from './v5.js';

export const SOURCE_NAME = 'homie';
/** Largest Homie 4 attribute payload read (`$properties` of a big node is a few hundred bytes). */
export const MAX_ATTRIBUTE_BYTES = 16 * 1024;
/**
 * How long a Homie 4 property may go without $datatype once its device says it is ready before a warning says so.
 * A device publishes every attribute before `$state` = `ready`, but the broker hands retained topics over filter by
 * filter (Hearth subscribes to `$state` before `$datatype`), in pieces when it is busy or far: at first sight a ready
 * device may still be missing datatypes that are on their way.
 */
export const DATATYPE_GRACE_MS = 3000;

export interface HomieAdapterOptions {
  prefix: string;
  /** Quiet time after the last attribute message before devices are rebuilt. */
  settleMs?: number;
  /** DATATYPE_GRACE_MS unless given. */
  datatypeGraceMs?: number;
}

type Listener = (topic: string, payload: Buffer) => void;

export class HomieAdapter implements DiscoveryAdapter {
  readonly name = SOURCE_NAME;
  private ctx?: DiscoveryContext;
  private readonly prefix: string;
  private readonly filters: string[];
  private readonly v4 = new HomieV4Tree();
  private readonly v5 = new Map<string, { state?: string; description?: string }>();
  /** By `4:<id>` / `5:<id>`. */
  private readonly converted = new Map<string, ConvertedHomie & { name?: string }>();
  private readonly dirty = new Set<string>();
  private timer?: NodeJS.Timeout;
  private signature = '';
  private readonly logged = new Map<string, string>();
  private readonly refusals = new PerKeyThrottle();
  /**
   * Homie 4 properties without $datatype, by device id, then `<node>/<property>`: since when their device has been
   * ready without it (undefined while it is not), and whether the warning was given; `waiting`, the earliest such
   * moment of a property not said yet. A property leaves when its $datatype comes or it is no longer listed; said
   * once while it stays.
   */
  private readonly noDatatype = new Map<string, { entries: Map<string, { since?: number; said: boolean }>; waiting?: number }>();
  private datatypeTimer?: NodeJS.Timeout;
  /** Lines about what was skipped or refused, bounded across topics; debug lines on a budget of their own. */
  private readonly lines = new LineTrickle((q) =>
    this.ctx?.log.warn(
      { quietCount: q.count, topics: q.first },
      `homie: ${q.count} more lines about skipped topics and devices not written one by one (${quietKeys(q)})`,
    ),
  );
  private readonly debugLines = new LineTrickle((q) =>
    this.ctx?.log.debug({ quietCount: q.count, topics: q.first }, `homie: ${q.count} more debug lines about devices (${quietKeys(q)})`),
  );
  /** A line per device found or gone, bounded across devices too: a publisher invents devices. */
  private readonly deviceLines = new LineTrickle((q) =>
    this.ctx?.log.info({ quietCount: q.count, topics: q.first }, `homie: ${q.count} more devices found or gone, not logged one by one (${quietKeys(q)})`),
  );
  private readonly onMessage: Listener = (topic, payload) => this.handle(topic, payload);

  constructor(private readonly options: HomieAdapterOptions) {
    this.prefix = options.prefix.replace(/\/+$/, '');
    this.filters = [...v4Filters(this.prefix), ...v5Filters(this.prefix)];
  }

  start(ctx: DiscoveryContext): void {
    this.ctx = ctx;
    ctx.connection.on('message', this.onMessage);
    ctx.connection.subscribe(this.filters);
  }

  stop(): void {
    if (!this.ctx) return;
    this.ctx.connection.off('message', this.onMessage);
    this.ctx.connection.unsubscribe(this.filters);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    clearTimeout(this.datatypeTimer);
    this.datatypeTimer = undefined;
    this.lines.stop();
    this.debugLines.stop();
    this.deviceLines.stop();
    this.ctx = undefined;
  }

  /** Everything one message means to this adapter. Exposed for tests. */
  handle(topic: string, payload: Buffer): void {
    if (!this.ctx || !topic.startsWith(`${this.prefix}/`)) return;
    const levels = topic.slice(this.prefix.length + 1).split('/');
    if (!levels[levels.length - 1].startsWith('$')) return;
    try {
      const limit = levels[0] === '5' ? MAX_DESCRIPTION_BYTES : MAX_ATTRIBUTE_BYTES;
      if (payload.length > limit) {
        this.refuse(topic, `${payload.length} bytes is over the ${limit}-byte limit`);
        return;
      }
      const text = payload.toString('utf8');
      if (levels[0] === '5') {
        if (levels.length !== 3) return;
        const [, dev, attr] = levels;
        if (attr !== '$state' && attr !== '$description') return;
        let entry = this.v5.get(dev);
        if (!entry) {
          if (this.v5.size >= MAX_V4_DEVICES) throw new HomieLimitError(`more than ${MAX_V4_DEVICES} Homie 5 devices`);
          this.v5.set(dev, (entry = {}));
        }
        if (attr === '$description') entry.description = text.trim() || undefined;
        else entry.state = text.trim() || undefined;
        // An empty $state removes the device.
        if (!entry.state && (attr === '$state' || !entry.description)) this.v5.delete(dev);
        this.markDirty(`5:${dev}`);
        return;
      }
      const dev = this.v4.apply(levels, text);
      if (dev) this.markDirty(`4:${dev}`);
    } catch (err) {
      if (err instanceof HomieLimitError) this.refuse(topic, err.message);
      else this.refuse(topic, err instanceof RangeError ? 'it is nested too deeply' : 'it could not be handled', err);
    }
  }

  /** A message that was not used: one line per topic a minute, with the reason; what is known so far is kept. */
  private refuse(topic: string, reason: string, err?: unknown): void {
    const suppressed = this.refusals.take(topic);
    if (suppressed === undefined) return;
    this.lines.line(topic, () =>
      this.ctx?.log[err ? 'error' : 'warn'](
        { topic, reason, ...(err ? { err } : {}), ...(suppressed ? { suppressed } : {}) },
        `homie: skipped ${topic}: ${reason}`,
      ),
    );
  }

  private markDirty(key: string): void {
    this.dirty.add(key);
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, this.options.settleMs ?? 100);
    this.timer.unref?.();
  }

  /** Rebuild every device touched since the last flush. Exposed for tests. */
  flush(): void {
    if (!this.ctx) return;
    // This runs from a timer: nothing may escape it.
    for (const key of this.dirty) {
      try {
        this.convert(key);
      } catch (err) {
        this.converted.delete(key);
        this.refuse(this.describeTopic(key), err instanceof RangeError ? 'it is nested too deeply' : 'it could not be converted', err);
      }
    }
    this.dirty.clear();
    this.scheduleDatatypeCheck();
    try {
      this.publish();
    } catch (err) {
      this.ctx.log.error({ err }, 'homie: could not update the device registry');
    }
  }

  /** The topic that describes a device (`4:<id>` / `5:<id>`), for log lines. */
  private describeTopic(key: string): string {
    return key[0] === '5' ? `${this.prefix}/5/${key.slice(2)}/$description` : `${this.prefix}/${key.slice(2)}/$homie`;
  }

  private convert(key: string): void {
    const [version, dev] = [key[0], key.slice(2)];
    let result: { description?: Parameters<typeof homieToDevice>[0]; skipped: Skip[]; noDatatype?: Array<{ node: string; property: string }> };
    if (version === '5') {
      const entry = this.v5.get(dev);
      if (!entry) result = { skipped: [] };
      else if (!entry.description) result = { skipped: [{ what: dev, reason: 'incomplete', detail: 'it has not published $description yet' }] };
      else result = parseDescription(dev, entry.description);
    } else {
      result = this.v4.has(dev) ? this.v4.describe(dev) : { skipped: [] };
    }
    const gone = version === '5' ? !this.v5.has(dev) : !this.v4.has(dev);
    if (gone) {
      const before = this.converted.get(key);
      const device = before?.device;
      if (device)
        this.deviceLines.line(this.describeTopic(key), () =>
          this.ctx!.log.info({ device: device.id }, `homie: ${JSON.stringify(device.name)} is gone (its topics were cleared)`),
        );
      this.converted.delete(key);
      this.logged.delete(key);
      if (version === '4') this.noDatatype.delete(dev);
      return;
    }
    if (version === '4') this.warnDatatypes(dev, result.description?.name, result.noDatatype ?? []);
    const base = version === '5' ? `${this.prefix}/5` : this.prefix;
    const converted: ConvertedHomie = result.description ? homieToDevice(result.description, { base }) : { skipped: result.skipped };
    if (result.description) converted.skipped.unshift(...result.skipped);
    if (converted.device && converted.device.entities.length > MAX_ENTITIES_PER_DEVICE) {
      converted.skipped.unshift({
        what: dev,
        reason: 'too_many_entities',
        detail: `it has ${converted.device.entities.length} properties with tools, more than the ${MAX_ENTITIES_PER_DEVICE} a device may have`,
      });
      converted.device = undefined;
    }
    this.converted.set(key, converted);
    this.report(key, dev, converted);
  }

  /**
   * Homie 4 requires every property's $datatype, and a property is described only once it has come (v4.ts): one
   * without it has no tool, which a debug line alone would not tell anyone. Once the device says it is ready
   * (`$state` ready or alert: it has published all it will) and a property still has none DATATYPE_GRACE_MS later,
   * one warning names the device, node and property; once per property while it stays so. A timer looks again when
   * that moment comes, as no message may (scheduleDatatypeCheck, after each flush).
   */
  private warnDatatypes(dev: string, name: string | undefined, missing: Array<{ node: string; property: string }>): void {
    const before = this.noDatatype.get(dev);
    if (!missing.length) {
      this.noDatatype.delete(dev);
      return;
    }
    const ready = READY_STATES.has(this.v4.state(dev) ?? '');
    const now = Date.now();
    const grace = this.options.datatypeGraceMs ?? DATATYPE_GRACE_MS;
    const entries = new Map<string, { since?: number; said: boolean }>();
    let waiting: number | undefined;
    for (const { node, property } of missing) {
      const path = `${node}/${property}`;
      const entry = before?.entries.get(path) ?? { said: false };
      entry.since = ready ? (entry.since ?? now) : undefined;
      entries.set(path, entry);
      if (entry.said || entry.since === undefined) continue;
      if (now - entry.since < grace) {
        waiting = Math.min(waiting ?? entry.since, entry.since);
        continue;
      }
      entry.said = true;
      const topic = `${this.prefix}/${dev}/${path}/$datatype`;
      this.lines.line(topic, () =>
        this.ctx?.log.warn(
          { device: dev, node, property, topic, reason: 'no_datatype' },
          `homie: property ${path} of Homie 4 device ${JSON.stringify(dev)}${name ? ` (${JSON.stringify(name.slice(0, 60))})` : ''} has no tool: ` +
            'the device says it is ready, but the property has not announced $datatype, which Homie 4 requires',
        ),
      );
    }
    this.noDatatype.set(dev, { entries, waiting });
  }

  /** A rebuild of the devices whose properties have waited DATATYPE_GRACE_MS for their $datatype, when they have. */
  private scheduleDatatypeCheck(): void {
    clearTimeout(this.datatypeTimer);
    this.datatypeTimer = undefined;
    let first: number | undefined;
    for (const { waiting } of this.noDatatype.values()) if (waiting !== undefined) first = Math.min(first ?? waiting, waiting);
    if (first === undefined || !this.ctx) return;
    const grace = this.options.datatypeGraceMs ?? DATATYPE_GRACE_MS;
    this.datatypeTimer = setTimeout(
      () => {
        this.datatypeTimer = undefined;
        const now = Date.now();
        let due = false;
        for (const [dev, { waiting }] of this.noDatatype)
          if (waiting !== undefined && now - waiting >= grace) {
            this.markDirty(`4:${dev}`);
            due = true;
          }
        // A timer that fired a moment early: look again (the flush after a rebuild schedules the next one).
        if (!due) this.scheduleDatatypeCheck();
      },
      Math.max(0, first + grace - Date.now()),
    );
    this.datatypeTimer.unref?.();
  }

  private report(key: string, dev: string, c: ConvertedHomie): void {
    const log = this.ctx!.log;
    const signature = JSON.stringify({ skipped: c.skipped, entities: c.device?.entities.map((e) => [e.id, e.name, e.kind]) });
    if (this.logged.get(key) === signature) return;
    const first = !this.logged.has(key);
    this.logged.set(key, signature);
    const label = `Homie ${key[0]} device ${JSON.stringify(dev)}`;
    if (!c.device) {
      const s = c.skipped.find((x) => !x.partial) ?? c.skipped[0];
      // Incomplete devices are normal during the retained burst: only a debug line.
      const level = s?.reason === 'incomplete' ? 'debug' : 'info';
      const topic = this.describeTopic(key);
      (level === 'debug' ? this.debugLines : this.lines).line(topic, () =>
        log[level]({ device: dev, topic, reason: s?.reason, skipped: groupSkips(c.skipped) }, `homie: skipped ${label}: ${s?.detail ?? 'no reason'}`),
      );
      return;
    }
    const device = c.device;
    const topic = this.describeTopic(key);
    // Found: an info line on the devices' budget; updated: a debug line on the debug budget.
    (first ? this.deviceLines : this.debugLines).line(topic, () =>
      log[first ? 'info' : 'debug'](
        { device: device.id, topic, entities: device.entities.length },
        `homie: ${first ? 'found' : 'updated'} ${label} with ${device.entities.length} entities`,
      ),
    );
    if (c.skipped.length) {
      this.debugLines.line(topic, () =>
        log.debug(
          { device: device.id, skipped: c.skipped.map((s) => ({ what: s.what, reason: s.reason, detail: s.detail })) },
          `homie: ${c.skipped.length} properties of ${label} have no tool of their own`,
        ),
      );
    }
  }

  /** Hand the registry every Homie device in one go (a v5 device wins over a v4 one with the same id). */
  private publish(): void {
    const byId = new Map<string, Device>();
    const ordered = [...this.converted.entries()].sort(([a], [b]) => (a[0] === b[0] ? a.localeCompare(b) : a[0] === '5' ? -1 : 1));
    for (const [key, c] of ordered) {
      if (!c.device) continue;
      if (byId.has(c.device.id)) {
        this.ctx!.log.warn({ device: c.device.id }, `homie: ${key} has the same id as a Homie 5 device; the Homie 5 one is used`);
        continue;
      }
      byId.set(c.device.id, c.device);
    }
    const devices = [...byId.values()];
    const signature = listSignature(devices);
    if (signature === this.signature) return;
    this.signature = signature;
    const admitted = admitDiscovered(devices);
    for (const r of admitted.refused) {
      if (this.refusals.take(r.what) !== undefined)
        this.lines.line(r.what, () => this.ctx?.log.warn({ device: r.what, reason: r.reason }, `homie: refused ${r.what}: ${r.reason}`));
    }
    this.ctx!.registry.setSource(SOURCE_NAME, SOURCE_PRIORITY.homie, admitted.devices);
  }
}

/** The factory `discovery/index.ts` registers. */
export function homieAdapter(config: HearthConfig): DiscoveryAdapter | undefined {
  const c = config.discovery?.homie;
  if (!c?.enabled) return undefined;
  return new HomieAdapter({ prefix: discoveryPrefix('homie', c.prefix) });
}
