// Zigbee2MQTT does not retain device state by default, so after a restart
// Hearth may know a lamp exists but not whether it is on. For properties with
// the GET access bit, one `<device>/get` asks the device to report. Only for
// devices whose state has not arrived shortly after discovery, once each,
// never for battery devices (a read would wait for a sleeping radio), and
// spaced out so a big network is not flooded. The lines saying so are bounded (util/line-budget.ts): a list of
// thousands of devices asks for minutes, and writes a few lines, then one a second summing up the rest.
import type { Logger } from '../../../log.js';
import { errorOf } from '../../../util/error.js';
import { LineTrickle, quietKeys } from '../../../util/line-budget.js';

export interface RefreshTarget {
  deviceId: string;
  baseTopic: string;
  properties: string[];
  sleepy: boolean;
}

export interface RefreshPublisher {
  readonly connected: boolean;
  publish(topic: string, payload: string, options?: { qos?: 0 | 1; retain?: boolean }): Promise<void>;
}

export class Refresher {
  /** Devices already asked (or that reported on their own). */
  private readonly done = new Set<string>();
  private readonly heard = new Set<string>();
  private readonly pending = new Map<string, RefreshTarget>();
  private readonly queue: RefreshTarget[] = [];
  private timers = new Set<NodeJS.Timeout>();
  private draining = false;
  private readonly lines = new LineTrickle((q) =>
    this.log.debug({ quietCount: q.count, topics: q.first }, `zigbee2mqtt: asked ${q.count} more devices for their state (${quietKeys(q)})`),
  );

  constructor(
    private readonly mqtt: RefreshPublisher,
    private readonly log: Logger,
    /** How long to wait for a state message before asking. */
    private readonly waitMs = 1500,
    /** Gap between two `/get` messages. */
    private readonly gapMs = 100,
  ) {}

  /** A message arrived on this topic: a device's state topic means it needs no read. */
  noteMessage(topic: string): void {
    this.heard.add(topic);
  }

  /** Devices as they are now: new ones get a check after `waitMs`. */
  consider(targets: RefreshTarget[]): void {
    for (const t of targets) {
      if (t.sleepy || !t.properties.length || this.done.has(t.deviceId) || this.pending.has(t.deviceId)) continue;
      this.pending.set(t.deviceId, t);
      this.later(this.waitMs, () => {
        const current = this.pending.get(t.deviceId);
        this.pending.delete(t.deviceId);
        if (!current || this.done.has(t.deviceId)) return;
        this.done.add(t.deviceId);
        if (this.heard.has(current.baseTopic)) return;
        this.queue.push(current);
        this.drain();
      });
    }
  }

  /** A device is gone (or renamed): forget the pending check, a new one may come. */
  forget(deviceId: string): void {
    this.pending.delete(deviceId);
  }

  private later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    timer.unref?.();
    this.timers.add(timer);
  }

  private drain(): void {
    if (this.draining) return;
    const next = this.queue.shift();
    if (!next) return;
    this.draining = true;
    if (this.mqtt.connected) {
      const body = JSON.stringify(Object.fromEntries(next.properties.map((p) => [p, ''])));
      this.mqtt.publish(`${next.baseTopic}/get`, body, { qos: 0, retain: false }).then(
        () =>
          this.lines.line(`${next.baseTopic}/get`, () =>
            this.log.debug({ topic: `${next.baseTopic}/get`, properties: next.properties }, 'zigbee2mqtt: asked a device for its state'),
          ),
        (err: unknown) =>
          this.lines.line(`${next.baseTopic}/get`, () =>
            this.log.debug({ err: errorOf(err), topic: `${next.baseTopic}/get` }, 'zigbee2mqtt: could not ask a device for its state'),
          ),
      );
    }
    this.later(this.gapMs, () => {
      this.draining = false;
      this.drain();
    });
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.pending.clear();
    this.queue.length = 0;
    this.draining = false;
    this.lines.stop();
  }
}
