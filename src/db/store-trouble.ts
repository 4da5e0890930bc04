// A store that goes on in memory when its SQLite file cannot be read or written (a read-only or locked database): the
// trouble is logged once per run, not once per row, and what was not stored is kept for this run only.
import type { Logger } from '../log.js';

export class StoreTrouble {
  private said = false;

  constructor(
    private readonly log: Logger | undefined,
    /** What the store could not do, and what the run keeps meanwhile. */
    private readonly message: string,
  ) {}

  /** Log the trouble (the first time in this run only). */
  say(err: unknown): void {
    if (this.said) return;
    this.said = true;
    this.log?.warn({ err }, this.message);
  }

  /** What `fn` reads, or undefined (the trouble said) when the database fails. */
  read<T>(fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      this.say(err);
      return undefined;
    }
  }
}
