// A turn: an async iterable of events plus a result that settles once.
import { randomUUID } from 'node:crypto';
import type { AgentEvent, Turn, TurnResult } from './types.js';

export class TurnHandle implements Turn {
  readonly id = randomUUID();
  readonly abort = new AbortController();
  private readonly buffer: AgentEvent[] = [];
  private waiters: Array<() => void> = [];
  private ended = false;
  private settled?: TurnResult;
  private readonly resultPromise: Promise<TurnResult>;
  private resolveResult!: (r: TurnResult) => void;

  constructor(private readonly onEvent: (event: AgentEvent, turnId: string) => void) {
    this.resultPromise = new Promise((resolve) => (this.resolveResult = resolve));
  }

  get done(): boolean {
    return this.settled !== undefined;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  emit(event: AgentEvent): void {
    if (this.ended) return;
    this.buffer.push(event);
    try {
      this.onEvent(event, this.id);
    } catch {
      // A listener's failure is not the turn's.
    }
    this.wake();
  }

  /** Settle the turn exactly once. */
  finish(result: TurnResult): void {
    if (this.settled) return;
    this.settled = result;
    this.ended = true;
    this.resolveResult(result);
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  result(): Promise<TurnResult> {
    return this.resultPromise;
  }

  interrupt(): void {
    if (!this.abort.signal.aborted) this.abort.abort(new Error('interrupted'));
  }

  async *[Symbol.asyncIterator](): AsyncIterator<AgentEvent> {
    let i = 0;
    for (;;) {
      while (i < this.buffer.length) yield this.buffer[i++];
      if (this.ended) return;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}
