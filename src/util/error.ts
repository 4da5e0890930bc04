// A thrown value as an Error, so a log line's `err` goes through pino's error serializer
// (type, message, stack, cause) whatever was thrown.
export function errorOf(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
