// Where a long test got to: each phase with the seconds since it started, said as the test's diagnostic when it
// finishes and on stderr when it does not (a time-out says nothing of where the test was).
export class Phases {
  private readonly t0 = Date.now();
  private readonly list: string[] = [];
  private finished = false;

  constructor(private readonly name: string) {}

  /** Whole seconds since the start, for the test's own lines. */
  seconds(): number {
    return Math.round((Date.now() - this.t0) / 1000);
  }

  phase(what: string): void {
    this.list.push(`${this.seconds()} s ${what}`);
  }

  /** At the test's end: the mark that it finished, and its phases as one diagnostic line. */
  done(): string {
    this.finished = true;
    return `phases: ${this.list.join(' | ')}`;
  }

  /** In after(): what the test went through, when it did not finish. */
  reportIfUnfinished(): void {
    if (!this.finished) console.error(`${this.name} did not finish; it went: ${this.list.join(' | ')}`);
  }
}
