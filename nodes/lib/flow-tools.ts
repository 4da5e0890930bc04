// The controller behind hearth-tool: a host tool whose work a flow does.
// Hearth's external-tool wrapper runs validation, policy, approvals and audit
// first; then the call goes out of the node as a message and waits for a
// hearth-tool-result node to answer it (any node, any flow: answers find their
// call by id), or for the timeout, or for the agent to cancel it.
import type { GeneratedTool, JsonSchema, ToolCall, ToolResult, ToolResultObject } from '../../dist/tools/types.js';
import { checkExternalToolDef, createExternalTool, DEFAULT_EXTERNAL_TIMEOUT_MS } from '../../dist/tools/external-tools.js';
import type { BridgeController } from './bridge.js';

export interface FlowToolSettings {
  name: string;
  description: string;
  parameters: JsonSchema;
  capability: 'read' | 'actuator';
  /** Longest wait for the flow's answer; default 30 s. */
  timeoutMs?: number;
  /** `flow:<node id>`. */
  source: string;
}

/** What the tool node sends for a call. */
export interface CallInfo {
  id: string;
  name: string;
  principal: string;
  session: string | null;
  runId: string | null;
  timeoutMs: number;
}

export interface FlowToolHooks {
  /** A call to run: send it out of the first output. */
  call(args: Record<string, unknown>, call: CallInfo): void;
  /** A call was withdrawn (turn interrupted, timeout): the second output. */
  cancelled(call: CallInfo, reason: 'timeout' | 'interrupted' | 'closed'): void;
  /** Calls waiting for an answer changed. */
  activity?(waiting: number): void;
}

interface PendingCall {
  info: CallInfo;
  owner: FlowToolController;
  resolve(result: ToolResult): void;
  reject(err: Error): void;
}

/** Calls waiting for a flow's answer, in this Node-RED process. */
const pendingCalls = new Map<string, PendingCall>();

export class UnknownCallError extends Error {
  readonly code = 'unknown_call';
  constructor(id: string) {
    super(`no tool call ${JSON.stringify(id)} is waiting for an answer (answered already, timed out or cancelled)`);
    this.name = 'UnknownCallError';
  }
}

/** Turn what a flow answered into a tool result: a string, or {text, details, isError}, or anything as JSON. */
export function resultFrom(payload: unknown, error?: unknown): ToolResultObject {
  if (error !== undefined && error !== null && error !== false && error !== '') {
    const text =
      typeof error === 'string'
        ? error
        : typeof (error as { message?: unknown }).message === 'string'
          ? (error as { message: string }).message
          : JSON.stringify(error);
    return { text: `failed: ${text}`, isError: true };
  }
  if (typeof payload === 'string') return { text: payload };
  if (payload === undefined || payload === null) return { text: 'done' };
  if (typeof payload === 'object' && !Array.isArray(payload)) {
    const p = payload as Record<string, unknown>;
    if (typeof p.text === 'string' || typeof p.error === 'string' || p.isError !== undefined) {
      const out: ToolResultObject = {};
      if (typeof p.text === 'string') out.text = p.text;
      if (typeof p.error === 'string') out.error = p.error;
      if (p.isError === true) out.isError = true;
      if (p.details && typeof p.details === 'object' && !Array.isArray(p.details)) out.details = p.details as Record<string, unknown>;
      return out;
    }
  }
  return { text: JSON.stringify(payload) };
}

/** Answer a waiting call (hearth-tool-result). Throws UnknownCallError when no call waits under that id. */
export function answerCall(id: string, result: ToolResultObject): CallInfo {
  const p = pendingCalls.get(id);
  if (!p) throw new UnknownCallError(id);
  pendingCalls.delete(id);
  p.resolve(result);
  p.owner.changed();
  return p.info;
}

/** How many calls wait for an answer (all nodes; tests). */
export function waitingCalls(): number {
  return pendingCalls.size;
}

export class FlowToolController {
  private remove?: () => void;
  private tool?: GeneratedTool;
  private closed = false;
  readonly timeoutMs: number;

  constructor(
    private readonly bridge: BridgeController,
    private readonly settings: FlowToolSettings,
    private readonly hooks: FlowToolHooks,
  ) {
    this.timeoutMs = settings.timeoutMs ?? DEFAULT_EXTERNAL_TIMEOUT_MS;
    // Fail early (at deploy) on a bad name or schema.
    checkExternalToolDef({ ...settings, timeoutMs: this.timeoutMs });
  }

  /** Register the tool with the bridge; sessions get it with their next turn. */
  async start(): Promise<void> {
    const hearth = await this.bridge.ready();
    if (this.closed) return;
    const tool = createExternalTool(
      {
        ...this.settings,
        timeoutMs: this.timeoutMs,
        handler: (args, call) => this.handle(args, call),
      },
      {
        policy: hearth.policy,
        audit: hearth.audit,
        approvals: hearth.approvals,
        log: hearth.bridge.log.child({ part: 'flow-tool', tool: this.settings.name }),
      },
    );
    const external = await this.bridge.externalTools();
    if (this.closed) return;
    this.remove = external.add(tool);
    this.tool = tool;
  }

  get registered(): boolean {
    return !!this.tool;
  }

  /** Run a call through the tool as an agent would (with every check): tests and the device node. */
  async invoke(args: Record<string, unknown>, call: ToolCall): Promise<ToolResultObject> {
    if (!this.tool) throw new Error(`tool ${this.settings.name} is not registered yet`);
    return (await this.tool.handler(args, call)) as ToolResultObject;
  }

  changed(): void {
    this.hooks.activity?.(this.waiting());
  }

  private waiting(): number {
    let n = 0;
    for (const p of pendingCalls.values()) if (p.owner === this) n++;
    return n;
  }

  private handle(args: Record<string, unknown>, call: ToolCall): Promise<ToolResult> {
    const info: CallInfo = {
      id: call.requestId,
      name: this.settings.name,
      principal: call.principal.id,
      session: call.session,
      runId: call.runId,
      timeoutMs: this.timeoutMs,
    };
    return new Promise<ToolResult>((resolve, reject) => {
      if (this.closed) return reject(new Error('the hearth-tool node is closing'));
      const onAbort = () => {
        if (pendingCalls.get(info.id)?.owner !== this) return;
        pendingCalls.delete(info.id);
        const reason = (call.signal.reason as { name?: string } | undefined)?.name === 'ExternalToolTimeout' ? 'timeout' : 'interrupted';
        this.changed();
        this.hooks.cancelled(info, reason);
        reject(call.signal.reason instanceof Error ? call.signal.reason : new Error(reason));
      };
      pendingCalls.set(info.id, {
        info,
        owner: this,
        resolve: (r) => {
          call.signal.removeEventListener('abort', onAbort);
          resolve(r);
        },
        reject: (e) => {
          call.signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      });
      call.signal.addEventListener('abort', onAbort, { once: true });
      this.changed();
      try {
        this.hooks.call(structuredClone(args), info);
      } catch (err) {
        pendingCalls.delete(info.id);
        call.signal.removeEventListener('abort', onAbort);
        reject(err as Error);
      }
    });
  }

  /** Unregister the tool and fail its waiting calls. */
  close(): void {
    this.closed = true;
    this.remove?.();
    this.remove = undefined;
    for (const [id, p] of pendingCalls) {
      if (p.owner !== this) continue;
      pendingCalls.delete(id);
      this.hooks.cancelled(p.info, 'closed');
      p.reject(new Error('the hearth-tool node was closed (redeployed) before the flow answered'));
    }
  }
}
