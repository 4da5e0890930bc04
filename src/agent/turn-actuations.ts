// How many actuations one turn may make. A model that answers with a thousand
// tool calls would otherwise have every one of them run (each audited, each a
// real command to a device): a turn counts the actuator calls it starts, and
// past `agent.max_actions_per_turn` the rest are refused with a result the
// model reads, recorded in the audit as refused, and said once on the turn
// as a notice. Both engines (builtin, jan) count here, so every door that runs
// a turn (sessions, the OpenAI-compatible door, Wyoming, Node-RED, the kit's
// rpc) has the same bound, set in one place (createEngine, from the config).

import { DEFAULT_MAX_ACTIONS_PER_TURN } from '../config/schema.js';

export { DEFAULT_MAX_ACTIONS_PER_TURN };

/** How a refusal over the bound begins (a call's result is `not done: ` and this): doors that answer people count them. */
export const OVER_BOUND = 'this turn already made';

/** Whether a call's result says it was refused for the turn's bound on actions. */
export function refusedOverBound(result: string | undefined): boolean {
  return !!result?.startsWith(`not done: ${OVER_BOUND}`);
}

export class TurnActuations {
  private started = 0;
  private refusedCount = 0;

  constructor(readonly max: number = DEFAULT_MAX_ACTIONS_PER_TURN) {}

  /** Count one actuator call about to run: undefined when it may, else why not (the model's result and the audit's reason). */
  take(): string | undefined {
    if (this.started < this.max) {
      this.started++;
      return undefined;
    }
    this.refusedCount++;
    return `${OVER_BOUND} ${this.max} actions, the most one turn may make (agent.max_actions_per_turn); no more are run in this turn`;
  }

  /** How many were refused so far. */
  get refused(): number {
    return this.refusedCount;
  }

  /** What the turn says when its first action over the bound is refused (undefined otherwise). */
  noticeOnFirstRefusal(): string | undefined {
    if (this.refusedCount !== 1) return undefined;
    return `This turn reached its bound of ${this.max} actions (agent.max_actions_per_turn): further actions in it are refused and nothing is sent for them.`;
  }
}
