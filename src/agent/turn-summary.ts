// What a turn did, gathered from its events: the answer, the tool calls with
// their outcomes, and the audit and approval ids. Front doors that answer a
// prompt in one piece (HTTP without streaming, Node-RED) report this.
import type { AgentEvent, TurnResult } from './types.js';

export interface ToolCallSummary {
  id: string;
  /** The bare tool name (without `host__`). */
  name: string;
  args: Record<string, unknown> | null;
  result?: string;
  isError?: boolean;
  auditId?: number;
  approvalId?: string;
}

export class TurnSummary {
  readonly toolCalls: ToolCallSummary[] = [];
  readonly auditIds: number[] = [];
  readonly approvalIds: string[] = [];
  /** What the engine said of the turn itself (a bound reached, a subagent still running). */
  readonly notices: string[] = [];
  readonly events: AgentEvent[] = [];
  private lastStepText = '';
  private allText = '';

  constructor(private readonly keepEvents = false) {}

  add(event: AgentEvent): void {
    if (this.keepEvents) this.events.push(event);
    switch (event.type) {
      case 'step':
        // The answer is what the model said in its last round.
        this.lastStepText = '';
        break;
      case 'token':
        this.lastStepText += event.text;
        this.allText += event.text;
        break;
      case 'notice':
        this.notices.push(event.text);
        break;
      case 'tool_call':
        this.toolCalls.push({ id: event.id, name: event.name.replace(/^host__/, ''), args: event.args });
        break;
      case 'tool_result': {
        const call = this.toolCalls.find((c) => c.id === event.id);
        if (call) Object.assign(call, { result: event.content, isError: event.is_error });
        break;
      }
      case 'tool_details': {
        const call = this.toolCalls.find((c) => c.id === event.id);
        const { auditId, approvalId } = event.details as { auditId?: unknown; approvalId?: unknown };
        if (typeof auditId === 'number') {
          if (!this.auditIds.includes(auditId)) this.auditIds.push(auditId);
          if (call) call.auditId = auditId;
        }
        if (typeof approvalId === 'string') {
          if (!this.approvalIds.includes(approvalId)) this.approvalIds.push(approvalId);
          if (call) call.approvalId = approvalId;
        }
        break;
      }
      default:
        break;
    }
  }

  get text(): string {
    return (this.lastStepText || this.allText).trim();
  }

  result(r: TurnResult) {
    return {
      stopReason: r.stopReason,
      ...(r.error !== undefined ? { error: r.error } : {}),
      toolCalls: this.toolCalls,
      auditIds: this.auditIds,
      ...(this.notices.length ? { notices: this.notices } : {}),
    };
  }
}
