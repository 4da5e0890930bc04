// The simulator's devices share one broker: when it goes away every client retries every second, and a log
// line per retry per device drowned the log (280 lines for a 60 s outage). One line when the first link is
// lost, one when the last is back, with the count of retries between.
import type { Logger } from '../log.js';

export class OutageLog {
  private readonly down = new Set<string>();
  private retries = 0;
  private since = 0;

  constructor(private readonly log: Logger) {}

  /** A link reported an error or went offline. */
  lost(link: string, err?: Error): void {
    if (this.down.has(link)) return;
    if (!this.down.size) {
      this.since = Date.now();
      this.retries = 0;
      this.log.warn(err ? { err } : {}, 'simulator: lost the broker; retrying quietly');
    }
    this.down.add(link);
  }

  /** A link is trying again. */
  retry(): void {
    if (this.down.size) this.retries++;
  }

  /** A link is connected. */
  back(link: string): void {
    if (!this.down.delete(link) || this.down.size) return;
    this.log.info({ retries: this.retries, downForMs: Date.now() - this.since }, 'simulator: the broker is back');
  }
}
