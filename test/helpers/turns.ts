// Reading a turn to its end in a test, with a deadline that names what arrived.
import type { AgentEvent, Turn, TurnResult } from '../../src/agent/types.js';

export async function drain(turn: Turn, timeoutMs = 15_000): Promise<{ events: AgentEvent[]; result: TurnResult }> {
  const events: AgentEvent[] = [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`turn did not settle within ${timeoutMs} ms; events: ${events.map((e) => e.type).join(',')}`)), timeoutMs);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const e of turn) events.push(e);
      })(),
      timeout,
    ]);
    return { events, result: await Promise.race([turn.result(), timeout]) };
  } finally {
    clearTimeout(timer);
  }
}

/** The events of one type, typed. */
export function of<T extends AgentEvent['type']>(events: AgentEvent[], type: T): Array<Extract<AgentEvent, { type: T }>> {
  return events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type);
}
