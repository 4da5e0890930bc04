// Bounded waiting: every wait in a test has a deadline and says what it waited for.
export async function waitFor<T>(what: string, probe: () => T | undefined | false | null, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
