// hearth-tool on a bridge connected to a daemon: the node provides its tool
// to the daemon over one stream (POST /api/flow-tools/providers, see
// src/http/api-flow-tools.ts). The daemon runs validation, policy, approvals
// and audit, then sends each call down the stream; the flow's answer goes
// back with POST /api/flow-tools/calls/:id/result. The stream is reopened
// after a drop (the daemon removed the tool at once and failed its waiting
// calls); a refusal that asking again cannot fix (403, a bad definition)
// stops it. No Node-RED in here.
import { checkExternalToolDef, DEFAULT_EXTERNAL_TIMEOUT_MS } from '../../dist/tools/external-tools.js';
import type { ToolResultObject } from '../../dist/tools/types.js';
import { DaemonError, type DaemonClient } from './daemon.js';
import type { CallInfo, FlowToolHooks, FlowToolSettings } from './flow-tools.js';

/** Calls this Node-RED process holds for a daemon, by call id (any hearth-tool-result answers them). */
const remoteCalls = new Map<string, { info: CallInfo; owner: RemoteFlowTool }>();

/** Is this a call a daemon sent (answered over HTTP)? */
export function isRemoteCall(id: string): boolean {
  return remoteCalls.has(id);
}

/** Send the flow's answer to the daemon that asked. Rejects with the daemon's reason (a call it withdrew is a 404). */
export async function answerRemoteCall(id: string, result: ToolResultObject): Promise<CallInfo> {
  const call = remoteCalls.get(id);
  if (!call) throw new Error(`no tool call ${JSON.stringify(id)} is waiting for an answer (answered already, timed out or cancelled)`);
  remoteCalls.delete(id);
  call.owner.changed();
  const body: Record<string, unknown> = {};
  if (result.text !== undefined || result.error !== undefined) body.text = result.text ?? result.error;
  if (result.isError || result.error !== undefined) body.isError = true;
  if (result.details) body.details = result.details;
  const path = `/api/flow-tools/calls/${encodeURIComponent(id)}/result`;
  try {
    await call.owner.daemon.request('POST', path, body);
  } catch (err) {
    // An answer the daemon refused (too large, bad details): the caller learns why now, not at the timeout.
    if (err instanceof DaemonError && err.status === 400) {
      const why = err.message.slice(0, 300);
      await call.owner.daemon.request('POST', path, { text: `failed: the flow's answer was refused: ${why}`, isError: true }).catch(() => undefined);
    }
    throw err;
  }
  return call.info;
}

export type RemoteToolState = 'registering' | 'ready' | 'retrying' | 'refused' | 'closed';

export interface RemoteFlowToolHooks extends FlowToolHooks {
  /** The registration's state, with the daemon's reason when it refused or dropped. */
  state?(state: RemoteToolState, detail?: string): void;
}

export class RemoteFlowTool {
  private abort?: AbortController;
  private retryTimer?: NodeJS.Timeout;
  private retryMs: number;
  private closed = false;
  private live = false;
  readonly timeoutMs: number;

  constructor(
    readonly daemon: DaemonClient,
    private readonly settings: FlowToolSettings,
    private readonly hooks: RemoteFlowToolHooks,
    private readonly retry = { minMs: 500, maxMs: 10_000 },
  ) {
    this.timeoutMs = settings.timeoutMs ?? DEFAULT_EXTERNAL_TIMEOUT_MS;
    // Fail early (at deploy) on a bad name or schema, as the embedded tool does; the daemon checks again.
    checkExternalToolDef({ ...settings, timeoutMs: this.timeoutMs });
    this.retryMs = retry.minMs;
  }

  /** Open the provider stream; resolves once the daemon first said ready or refused. */
  start(): Promise<void> {
    return new Promise((resolve) => {
      this.open(resolve);
    });
  }

  get registered(): boolean {
    return this.live;
  }

  changed(): void {
    let n = 0;
    for (const c of remoteCalls.values()) if (c.owner === this) n++;
    this.hooks.activity?.(n);
  }

  private open(settled: () => void = () => undefined): void {
    if (this.closed) return settled();
    const abort = new AbortController();
    this.abort = abort;
    this.hooks.state?.('registering');
    const definition = {
      name: this.settings.name,
      description: this.settings.description,
      parameters: this.settings.parameters,
      capability: this.settings.capability,
      timeoutMs: this.timeoutMs,
    };
    this.daemon
      .stream(
        '/api/flow-tools/providers',
        { source: this.settings.source, tools: [definition] },
        (event, data) => this.onEvent(event, data, settled),
        abort.signal,
      )
      .then(
        () => this.dropped('the daemon ended the stream', settled),
        (err: Error) => {
          if (abort.signal.aborted) return settled();
          const status = err instanceof DaemonError ? err.status : 0;
          // A refused token, a principal that may not provide tools, a bad definition: asking again changes nothing.
          if (status === 400 || status === 401 || status === 403 || status === 413) {
            this.live = false;
            this.hooks.state?.('refused', err.message);
            return settled();
          }
          // 409: another provider holds the name (or our old stream is not yet seen gone); 429, 5xx, no answer: try again.
          this.dropped(err.message, settled);
        },
      );
  }

  private onEvent(event: string, data: unknown, settled: () => void): void {
    const d = data as Record<string, any>;
    if (event === 'ready') {
      this.live = true;
      this.retryMs = this.retry.minMs;
      this.hooks.state?.('ready');
      settled();
    } else if (event === 'call' && d && typeof d.id === 'string') {
      const info: CallInfo = {
        id: d.id,
        name: String(d.tool ?? this.settings.name),
        principal: String(d.principal ?? ''),
        session: d.session ?? null,
        runId: d.runId ?? null,
        timeoutMs: Number(d.timeoutMs ?? this.timeoutMs),
      };
      remoteCalls.set(info.id, { info, owner: this });
      this.changed();
      try {
        this.hooks.call((d.args ?? {}) as Record<string, unknown>, info);
      } catch (err) {
        // The daemon waits for an answer: give it the failure rather than the timeout.
        void answerRemoteCall(info.id, { text: `failed: ${(err as Error).message}`, isError: true }).catch(() => undefined);
      }
    } else if (event === 'cancel' && d && typeof d.id === 'string') {
      const call = remoteCalls.get(d.id);
      if (!call || call.owner !== this) return;
      remoteCalls.delete(d.id);
      this.changed();
      this.hooks.cancelled(call.info, d.reason === 'timeout' ? 'timeout' : 'interrupted');
    }
  }

  /** The stream is gone: the daemon failed our waiting calls, so they are withdrawn here too; then reconnect. */
  private dropped(why: string, settled: () => void): void {
    this.live = false;
    for (const [id, c] of remoteCalls) {
      if (c.owner !== this) continue;
      remoteCalls.delete(id);
      this.hooks.cancelled(c.info, 'interrupted');
    }
    this.changed();
    if (this.closed) return settled();
    this.hooks.state?.('retrying', why);
    settled();
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, this.retry.maxMs);
    this.retryTimer = setTimeout(() => this.open(), wait);
  }

  /** Withdraw the tool (the stream ends, the daemon removes it) and forget its waiting calls. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.live = false;
    clearTimeout(this.retryTimer);
    this.abort?.abort();
    for (const [id, c] of remoteCalls) {
      if (c.owner !== this) continue;
      remoteCalls.delete(id);
      this.hooks.cancelled(c.info, 'closed');
    }
    this.hooks.state?.('closed');
  }
}
