// `max_tokens` and `stop` of an OpenAI chat completion, applied to Hearth's
// answer as it goes out (whole, or streamed piece by piece): the answer ends
// before the first stop sequence (finish_reason "stop"), or after max_tokens
// (finish_reason "length"). They cut the words, never the turn: what the turn
// does (a light switched, an approval asked for) happens whatever the limit.
// Hearth has no tokenizer: a token is counted as 4 characters, as in `usage`.

export const CHARS_PER_TOKEN = 4;

/** Rough token count, the same one `usage` reports. */
export function tokensOf(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

export class AnswerLimit {
  private pending = '';
  private written = 0;
  private ended = false;
  finishReason: 'stop' | 'length' = 'stop';
  private readonly maxChars: number | undefined;
  private readonly longestStop: number;

  constructor(
    maxTokens: number | undefined,
    private readonly stops: readonly string[] = [],
  ) {
    this.maxChars = maxTokens === undefined ? undefined : maxTokens * CHARS_PER_TOKEN;
    this.longestStop = Math.max(0, ...stops.map((s) => s.length));
  }

  /** The part of this piece that may go out now (a possible start of a stop sequence is held back). */
  push(text: string): string {
    if (this.ended) return '';
    this.pending += text;
    let cut = -1;
    for (const s of this.stops) {
      const at = this.pending.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      const out = this.pending.slice(0, cut);
      this.pending = '';
      const written = this.cap(out);
      this.ended = true;
      return written;
    }
    const keep = this.heldBack();
    const out = this.pending.slice(0, this.pending.length - keep);
    this.pending = this.pending.slice(this.pending.length - keep);
    return this.cap(out);
  }

  /** What is left once the answer is complete. */
  end(): string {
    if (this.ended) return '';
    const out = this.cap(this.pending);
    this.pending = '';
    this.ended = true;
    return out;
  }

  /** How many trailing characters could be the start of a stop sequence. */
  private heldBack(): number {
    for (let k = Math.min(this.longestStop - 1, this.pending.length); k > 0; k--) {
      const tail = this.pending.slice(this.pending.length - k);
      if (this.stops.some((s) => s.startsWith(tail))) return k;
    }
    return 0;
  }

  private cap(text: string): string {
    if (this.maxChars === undefined || this.written + text.length <= this.maxChars) {
      this.written += text.length;
      return text;
    }
    let end = this.maxChars - this.written;
    // Never half a surrogate pair.
    if (end > 0 && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
    this.written = this.maxChars;
    this.ended = true;
    this.finishReason = 'length';
    return text.slice(0, end);
  }
}

/** Cut a whole answer as a stream of it would be. */
export function limitAnswer(text: string, maxTokens: number | undefined, stops: readonly string[]): { text: string; finishReason: 'stop' | 'length' } {
  const limit = new AnswerLimit(maxTokens, stops);
  const out = limit.push(text) + limit.end();
  return { text: out, finishReason: limit.finishReason };
}
