// How a command fails in words: a message on stderr and an exit code.

/**
 * Bad input (exit 2 by default) or a thing that is not there (exit 1). Thrown in the command's own process, it
 * reaches main, which stops with `hearth: <message>` and this exit code.
 */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
    /** The daemon's error code, when the failure is a method's error (`hearth call` tells "no such tool" by it). */
    readonly controlCode?: number,
  ) {
    super(message);
    this.name = 'CliFailure';
  }
}

/** A repeatable option's values in the order given (`--devices a --devices b`): a collector, not a variadic
 * option, so the positional arguments after it stay positional. Undefined when not given, so "not given" differs from "none". */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** A whole number from an option, or a failure naming the option. */
export function wholeNumber(flag: string, raw: string, { min = -Infinity, max = Infinity } = {}): number {
  if (!/^[-+]?\d+$/.test(raw.trim())) throw new CliFailure(`${flag} ${JSON.stringify(raw)}: must be a whole number`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new CliFailure(`${flag} ${raw.slice(0, 40)}${raw.length > 40 ? '…' : ''}: too large a number`);
  if (n < min || n > max) {
    throw new CliFailure(`${flag} ${raw}: must be ${max === Infinity ? `at least ${min}` : `between ${min} and ${max}`}`);
  }
  return n;
}
