// The controller behind hearth-device: read one entity's state, or call one
// host tool, straight from a flow, as principal flow:<node id>, through the
// same policy and audit as an agent's calls. A call a confirm rule holds can
// wait for a person's decision (a hearth-approval node) and then go through.
import { randomUUID } from 'node:crypto';
import type { Entity } from '../../dist/devices/model.js';
import type { EntityState } from '../../dist/devices/state-cache.js';
import type { Hearth } from '../../dist/hearth.js';
import type { Principal, ToolResultObject } from '../../dist/tools/types.js';
import type { BridgeController } from './bridge.js';
import { DaemonError, type DaemonClient, type RemoteTool } from './daemon.js';
import { stateJson } from '../../dist/present/state.js';

export class DeviceError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly result?: ToolResultObject,
  ) {
    super(message);
    this.name = 'DeviceError';
  }
}

export interface DeviceSettings {
  nodeId: string;
  /** Roles for flow:<node id>, besides its stored ones. */
  roles?: string[];
  /** When a confirm rule holds a call: wait this long for a decision and then make the call (0: fail at once). */
  approvalWaitMs?: number;
  /** Told when a call waits for a person's decision (the node shows it). */
  onHeld?: (approvalId: string) => void;
}

export interface ReadOutcome {
  entity: { id: string; name: string; kind: string; area: string | null; unit: string | null };
  state: {
    value: unknown;
    attributes: Record<string, unknown>;
    available: boolean | null;
    updatedAt: string | null;
    frame?: { contentType: string; bytes: number; at: string };
  };
}

export interface CallOutcome {
  result: ToolResultObject;
  auditId?: number;
  /** Set when a confirm rule held the call and a person decided. */
  approvalId?: string;
}

/** What a call did, as data for the next node (hearth-device's msg.payload from version 1). */
export interface CallSummary {
  /** The audit row's outcome (confirmed, unconfirmed, failed, denied, interrupted), or ok/held/failed for a call without one. */
  outcome: string;
  /** The entity the call acted on, or null (a flow tool). */
  entity: string | null;
  /** Its state after the call, as this node may read it (null: none, or not readable). */
  state: Record<string, unknown> | null;
  auditId: number | null;
  approvalId: string | null;
}

/** The outcome word of a result without an audit row to ask. */
export function outcomeOfText(result: ToolResultObject): string {
  const text = result.text ?? '';
  const word = /^(confirmed|unconfirmed|failed|cancelled|denied)\b/.exec(text)?.[1];
  if (word) return word === 'cancelled' ? 'interrupted' : word;
  if (/^not allowed/.test(text)) return 'denied';
  if (typeof result.details?.approvalId === 'string') return 'held';
  return result.isError ? 'failed' : 'ok';
}

function entityInfo(e: Entity): ReadOutcome['entity'] {
  return { id: e.id, name: e.name, kind: e.kind, area: e.area ?? null, unit: e.unit ?? null };
}

function stateInfo(s: EntityState | undefined): ReadOutcome['state'] {
  return {
    value: s?.value ?? null,
    attributes: { ...(s?.attributes ?? {}) },
    available: s?.available ?? null,
    updatedAt: s?.updatedAt ? new Date(s.updatedAt).toISOString() : null,
    ...(s?.frame ? { frame: { contentType: s.frame.contentType, bytes: s.frame.bytes.length, at: new Date(s.frame.at).toISOString() } } : {}),
  };
}

export class DeviceController {
  private closed = false;
  private readonly waits = new Set<() => void>();

  constructor(
    private readonly bridge: BridgeController,
    private readonly settings: DeviceSettings,
  ) {}

  get principal(): Principal {
    return { id: `flow:${this.settings.nodeId}`, roles: this.settings.roles ?? [] };
  }

  /** An entity's state, if the policy lets this node read it (a refused read leaves an audit row). */
  async read(entityId: string): Promise<ReadOutcome> {
    if (this.bridge.daemon) return this.readRemote(this.bridge.daemon, entityId);
    const hearth = await this.bridge.ready();
    const entity = hearth.bridge.registry.entity(entityId);
    if (!entity) throw new DeviceError(`unknown entity ${JSON.stringify(entityId)}; hearth devices lists them`, 'unknown_entity');
    const principal = this.principal;
    // The one read check every surface asks (Hearth.reads), so a deny holds here as in the API and MCP.
    const decision = hearth.reads.decision(principal, entity);
    if (decision.effect !== 'allow') {
      let auditId: number | undefined;
      try {
        auditId = hearth.audit.record(
          {
            requestId: randomUUID(),
            principal: principal.id,
            session: null,
            runId: null,
            tool: 'get_state',
            entityId: entity.id,
            action: 'read',
            args: { entity: entity.id },
            decision: decision.effect,
            ruleId: decision.ruleId,
            reason: decision.reason,
          },
          { outcome: 'denied', error: `not allowed: ${decision.reason}` },
        );
      } catch {
        // the refusal stands without its row
      }
      throw new DeviceError(`not allowed: ${decision.reason}`, 'denied', { text: `not allowed: ${decision.reason}`, isError: true, details: { auditId } });
    }
    return { entity: entityInfo(entity), state: stateInfo(hearth.bridge.cache.get(entity.id)) };
  }

  /** Call a host tool (a device's, or a flow's) through the pipeline. Failed results reject with DeviceError. */
  async call(toolName: string, args: Record<string, unknown>): Promise<CallOutcome> {
    if (this.bridge.daemon) return this.callRemote(this.bridge.daemon, toolName, args);
    const hearth = await this.bridge.ready();
    if (!hearth.tools.get(toolName)) {
      // Name only the tools this node could use: the others are none of its business.
      const known = hearth.tools.forPrincipal(this.principal).map((t) => t.name);
      throw new DeviceError(`unknown tool ${JSON.stringify(toolName)}; known: ${known.join(', ') || '(none this node may use)'}`, 'unknown_tool');
    }
    if (!args || typeof args !== 'object' || Array.isArray(args))
      throw new DeviceError('the arguments must be an object, e.g. {"action":"turn_on"}', 'bad_args');
    let result = await hearth.tools.call(toolName, args, this.principal);
    let approvalId = typeof result.details?.approvalId === 'string' ? result.details.approvalId : undefined;
    if (result.isError && approvalId && (this.settings.approvalWaitMs ?? 0) > 0) {
      this.settings.onHeld?.(approvalId);
      const status = await this.waitForDecision(hearth, approvalId, this.settings.approvalWaitMs!);
      if (status !== 'granted') {
        throw new DeviceError(`approval ${approvalId} was ${status}; nothing was done`, `approval_${status}`, result);
      }
      result = await hearth.tools.call(toolName, args, this.principal);
    } else if (!result.isError) {
      approvalId = undefined;
    }
    const auditId = typeof result.details?.auditId === 'number' ? result.details.auditId : undefined;
    if (result.isError) throw new DeviceError(result.text ?? 'failed', 'failed', result);
    return { result, ...(auditId !== undefined ? { auditId } : {}), ...(approvalId ? { approvalId } : {}) };
  }

  /** The actions a tool takes (`turn_on`, `unlock`), or undefined when it is not known here. */
  async actionsOf(toolName: string): Promise<string[] | undefined> {
    try {
      if (this.bridge.daemon) {
        this.remoteTools ??= this.bridge.daemon.tools();
        const tools = await this.remoteTools.catch((err: Error) => {
          this.remoteTools = undefined;
          throw err;
        });
        return tools.find((t) => t.name === toolName)?.actions;
      }
      const hearth = await this.bridge.ready();
      return hearth.tools.get(toolName)?.meta.actions;
    } catch {
      return undefined;
    }
  }

  private remoteTools?: Promise<RemoteTool[]>;

  /** The data of a call's result: outcome from its audit row, the entity's state now if this node may read it. */
  async summarize(result: ToolResultObject, approvalId?: string): Promise<CallSummary> {
    if (this.bridge.daemon) {
      const entityId = typeof result.details?.entity === 'string' ? result.details.entity : null;
      const held = typeof result.details?.approvalId === 'string' ? result.details.approvalId : undefined;
      const state = entityId ? ((await this.bridge.daemon.stateFeed().snapshot()).find((e) => e.id === entityId) ?? null) : null;
      return {
        outcome: outcomeOfText(result),
        entity: entityId,
        state,
        auditId: typeof result.details?.auditId === 'number' ? result.details.auditId : null,
        approvalId: approvalId ?? held ?? null,
      };
    }
    const hearth = await this.bridge.ready();
    const auditId = typeof result.details?.auditId === 'number' ? result.details.auditId : null;
    const row = auditId !== null ? hearth.audit.get(auditId) : undefined;
    const entityId = typeof result.details?.entity === 'string' ? result.details.entity : (row?.entityId ?? null);
    const entity = entityId ? hearth.bridge.registry.entity(entityId) : undefined;
    const readable = entity && !hearth.readDenied(this.principal, entity);
    const held = typeof result.details?.approvalId === 'string' ? result.details.approvalId : undefined;
    return {
      outcome: row && row.outcome !== 'pending' ? row.outcome : outcomeOfText(result),
      entity: entityId,
      state: readable ? (stateJson(entity, hearth.bridge.cache.get(entity.id)) as Record<string, unknown>) : null,
      auditId,
      approvalId: approvalId ?? held ?? null,
    };
  }

  /** Resolves with the approval's status once it is no longer pending (or `timeout`). */
  private waitForDecision(hearth: Hearth, id: string, timeoutMs: number): Promise<string> {
    return new Promise((resolve) => {
      const check = () => {
        const a = hearth.approvals.get(id);
        if (!a) return finish('gone');
        if (a.status !== 'pending') finish(a.status);
      };
      const onDecided = (a: { id: string }) => {
        if (a.id === id) check();
      };
      const poll = setInterval(check, 500);
      const timer = setTimeout(() => finish('not decided in time'), timeoutMs);
      const finish = (status: string) => {
        clearInterval(poll);
        clearTimeout(timer);
        hearth.approvals.off('decided', onDecided);
        this.waits.delete(stop);
        resolve(status);
      };
      const stop = () => finish('cancelled (the node closed)');
      this.waits.add(stop);
      hearth.approvals.on('decided', onDecided);
      if (this.closed) stop();
    });
  }

  // The daemon's side: the token's principal reads and calls; the daemon's policy and audit decide and record.
  private async readRemote(daemon: DaemonClient, entityId: string): Promise<ReadOutcome> {
    const s = (await daemon.stateFeed().snapshot()).find((e) => e.id === entityId);
    if (!s)
      throw new DeviceError(
        `unknown entity ${JSON.stringify(entityId)}, or one ${daemon.principal ?? 'the token'} may not read; hearth devices lists them`,
        'unknown_entity',
      );
    return {
      entity: { id: s.id, name: s.name, kind: s.kind, area: s.area ?? null, unit: s.unit ?? null },
      state: { value: s.value, attributes: s.attributes, available: s.available, updatedAt: s.updatedAt },
    };
  }

  private async callRemote(daemon: DaemonClient, toolName: string, args: Record<string, unknown>): Promise<CallOutcome> {
    if (!args || typeof args !== 'object' || Array.isArray(args))
      throw new DeviceError('the arguments must be an object, e.g. {"action":"turn_on"}', 'bad_args');
    const once = async (): Promise<ToolResultObject> => {
      try {
        return await daemon.callTool(toolName, args);
      } catch (err) {
        if (err instanceof DaemonError && err.status === 404)
          throw new DeviceError(`unknown tool ${JSON.stringify(toolName)}; GET /api/tools (or hearth tools) lists them`, 'unknown_tool');
        if (err instanceof DaemonError && err.status === 403) throw new DeviceError(`not allowed: ${err.message}`, 'denied');
        throw err;
      }
    };
    let result = await once();
    let approvalId = typeof result.details?.approvalId === 'string' ? result.details.approvalId : undefined;
    if (result.isError && approvalId && (this.settings.approvalWaitMs ?? 0) > 0) {
      this.settings.onHeld?.(approvalId);
      const status = await this.waitForRemoteDecision(daemon, approvalId, this.settings.approvalWaitMs!);
      if (status !== 'granted') throw new DeviceError(`approval ${approvalId} was ${status}; nothing was done`, `approval_${status}`, result);
      result = await once();
    } else if (!result.isError) {
      approvalId = undefined;
    }
    const auditId = typeof result.details?.auditId === 'number' ? result.details.auditId : undefined;
    if (result.isError) throw new DeviceError(result.text ?? 'failed', 'failed', result);
    return { result, ...(auditId !== undefined ? { auditId } : {}), ...(approvalId ? { approvalId } : {}) };
  }

  /** A decision may come from anywhere (the CLI on the same database, the page): ask the daemon, on its events and now and then. */
  private waitForRemoteDecision(daemon: DaemonClient, id: string, timeoutMs: number): Promise<string> {
    return new Promise((resolve) => {
      let done = false;
      const check = () => {
        daemon.approval(id).then(
          (a) => {
            if (a.status !== 'pending') finish(a.status);
          },
          (err: Error) => {
            if (err instanceof DaemonError && err.status === 404) finish('gone');
          },
        );
      };
      const onApproval = (a: { id: string }) => {
        if (a.id === id) check();
      };
      const poll = setInterval(check, 500);
      const timer = setTimeout(() => finish('not decided in time'), timeoutMs);
      const finish = (status: string) => {
        if (done) return;
        done = true;
        clearInterval(poll);
        clearTimeout(timer);
        daemon.off('approval', onApproval);
        this.waits.delete(stop);
        resolve(status);
      };
      const stop = () => finish('cancelled (the node closed)');
      this.waits.add(stop);
      daemon.on('approval', onApproval);
      if (this.closed) stop();
    });
  }

  close(): void {
    this.closed = true;
    for (const stop of [...this.waits]) stop();
  }
}
