// Bounded waiting: every wait in a test has a deadline and says what it waited for.
// A deadline is a hang guard, not a speed bound: the number a test gives is what an idle machine needs with
// room to spare, and it is stretched (x4 by default, HEARTH_TEST_WAIT_SCALE to change) so a busy 2-core
// machine running another suite beside this one still passes. Only a failing test ever waits that long.
const SCALE = Math.max(1, Number(process.env.HEARTH_TEST_WAIT_SCALE ?? 4) || 4);

type Probe<T> = T | undefined | false | null;

/** Polls `probe` (sync or async) until it gives a value other than undefined, false or null. */
export async function waitFor<T>(what: string, probe: () => Probe<T> | Promise<Probe<T>>, timeoutMs = 5000): Promise<T> {
  const limit = timeoutMs * SCALE;
  const deadline = Date.now() + limit;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false && value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${limit} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
