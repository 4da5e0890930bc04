// Tools whose work a Node-RED flow does, provided to a running daemon over a
// stream (src/http/api-flow-tools.ts). A provider is one open stream: it
// declares its tools, the daemon wraps each in the external-tool checks
// (validation, policy, approvals, audit: external-tools.ts) and, for every
// call that passed them, hands the provider a call to run; the provider
// answers by call id. A provider's tools live exactly as long as its stream:
// when it drops, they are removed at once and its waiting calls fail.
//
// Nothing here knows about HTTP: the provider is given a `send` for its
// events and is closed by whoever holds the stream.
import { randomUUID } from 'node:crypto';
import type { ValidateFunction } from 'ajv';
import type { Logger } from '../log.js';
import { argumentBoundsProblem } from './argument-bounds.js';
import {
  checkExternalToolDef,
  createExternalTool,
  DEFAULT_EXTERNAL_TIMEOUT_MS,
  ExternalToolError,
  type ExternalToolDeps,
  type ExternalTools,
} from './external-tools.js';
import type { Capability, GeneratedTool, JsonSchema, ToolCall, ToolResult, ToolResultObject } from './types.js';

export const MAX_TOOLS_PER_PROVIDER = 32;
export const MAX_PROVIDERS_PER_HOLDER = 32;
/** One tool definition as JSON. */
export const MAX_DEFINITION_BYTES = 16 * 1024;
export const MAX_SCHEMA_DEPTH = 16;
export const MAX_TIMEOUT_MS = 10 * 60_000;
/** An answer's text and details, as JSON. */
export const MAX_ANSWER_BYTES = 64 * 1024;
export const MAX_SOURCE = 128;

/** A bad definition or a refused registration, naming the tool and field (`tools[1].parameters`). */
export class FlowToolProviderError extends Error {
  constructor(
    message: string,
    readonly code: 'bad_request' | 'name_taken' | 'too_many',
    readonly field?: string,
  ) {
    super(message);
    this.name = 'FlowToolProviderError';
  }
}

/** Who holds a provider: the principal, and the token it came with (none when auth is off). */
export interface ProviderHolder {
  principal: string;
  token?: string;
}

export interface FlowToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
  capability: Capability;
  timeoutMs: number;
  /** The arguments' validator, compiled once when the definition was checked. */
  validate: ValidateFunction;
}

/** What a provider is sent: a call to run, or a call withdrawn. */
export type ProviderEvent =
  | {
      event: 'call';
      data: {
        id: string;
        tool: string;
        args: Record<string, unknown>;
        principal: string;
        session: string | null;
        runId: string | null;
        requestId: string;
        timeoutMs: number;
      };
    }
  | { event: 'cancel'; data: { id: string; tool: string; reason: 'timeout' | 'interrupted' } };

interface Waiting {
  id: string;
  tool: string;
  resolve(result: ToolResult): void;
  reject(err: Error): void;
}

const same = (a: ProviderHolder, b: ProviderHolder) => a.principal === b.principal && a.token === b.token;

/** The nesting depth of a JSON value, walked without recursion. */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }];
  while (stack.length) {
    const { v, d } = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    max = Math.max(max, d + 1);
    if (max > MAX_SCHEMA_DEPTH) return max;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push({ v: child, d: d + 1 });
  }
  return max;
}

/** Check the definitions a provider sends; throws FlowToolProviderError naming the tool and field. */
export function checkDefinitions(input: unknown): FlowToolDefinition[] {
  if (!Array.isArray(input) || input.length === 0)
    throw new FlowToolProviderError('tools: must be a non-empty list of tool definitions', 'bad_request', 'tools');
  if (input.length > MAX_TOOLS_PER_PROVIDER)
    throw new FlowToolProviderError(`tools: at most ${MAX_TOOLS_PER_PROVIDER} tools per provider, got ${input.length}`, 'too_many', 'tools');
  const names = new Set<string>();
  return input.map((raw, i) => {
    const at = `tools[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new FlowToolProviderError(`${at}: must be a JSON object`, 'bad_request', at);
    const def = raw as Record<string, unknown>;
    const label = typeof def.name === 'string' ? `${at} (${def.name.slice(0, 60)})` : at;
    const bad = (field: string, problem: string) => new FlowToolProviderError(`${label}.${field}: ${problem}`, 'bad_request', `${at}.${field}`);
    for (const key of Object.keys(def)) {
      if (!['name', 'description', 'parameters', 'capability', 'timeoutMs'].includes(key))
        throw bad(key, 'unknown field; a tool has name, description, parameters, capability, timeoutMs');
    }
    const size = Buffer.byteLength(JSON.stringify(def));
    if (size > MAX_DEFINITION_BYTES)
      throw new FlowToolProviderError(`${label}: the definition is ${size} bytes, more than ${MAX_DEFINITION_BYTES}`, 'bad_request', at);
    const parameters = def.parameters ?? { type: 'object', properties: {} };
    if (depthOf(parameters) > MAX_SCHEMA_DEPTH) throw bad('parameters', `the schema is nested more than ${MAX_SCHEMA_DEPTH} levels deep`);
    const timeoutMs = def.timeoutMs ?? DEFAULT_EXTERNAL_TIMEOUT_MS;
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS)
      throw bad('timeoutMs', `must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
    const checked = {
      name: def.name as string,
      description: def.description as string,
      parameters: parameters as JsonSchema,
      capability: def.capability as Capability,
      timeoutMs,
    };
    let validate: ValidateFunction;
    try {
      validate = checkExternalToolDef(checked);
    } catch (err) {
      if (!(err instanceof ExternalToolError)) throw err;
      const field = err.code === 'bad_name' ? 'name' : err.code === 'bad_schema' ? 'parameters' : /capability/.test(err.message) ? 'capability' : 'description';
      throw bad(field, err.message);
    }
    if (names.has(checked.name)) throw bad('name', `${checked.name} is declared twice in this provider`);
    names.add(checked.name);
    return { ...checked, validate };
  });
}

/** Turn what a provider answered into a tool result; throws FlowToolProviderError on a bad answer. */
export function checkAnswer(input: Record<string, unknown>): ToolResultObject {
  for (const key of Object.keys(input)) {
    if (!['text', 'details', 'isError'].includes(key))
      throw new FlowToolProviderError(`${key}: unknown field; an answer has text, details, isError`, 'bad_request', key);
  }
  const out: ToolResultObject = {};
  if (input.text !== undefined) {
    if (typeof input.text !== 'string') throw new FlowToolProviderError('text: must be a string', 'bad_request', 'text');
    out.text = input.text;
  }
  if (input.isError !== undefined) {
    if (typeof input.isError !== 'boolean') throw new FlowToolProviderError('isError: must be true or false', 'bad_request', 'isError');
    if (input.isError) out.isError = true;
  }
  if (input.details !== undefined) {
    if (!input.details || typeof input.details !== 'object' || Array.isArray(input.details))
      throw new FlowToolProviderError('details: must be a JSON object', 'bad_request', 'details');
    const problem = argumentBoundsProblem(input.details);
    if (problem) throw new FlowToolProviderError(`details: ${problem.replace('the arguments', 'the details')}`, 'bad_request', 'details');
    out.details = input.details as Record<string, unknown>;
  }
  const size = Buffer.byteLength(JSON.stringify(out));
  if (size > MAX_ANSWER_BYTES) throw new FlowToolProviderError(`the answer is ${size} bytes, more than ${MAX_ANSWER_BYTES}`, 'bad_request', 'text');
  return out;
}

/** One open provider stream and its tools. */
export class FlowToolProvider {
  readonly id = randomUUID();
  readonly tools: GeneratedTool[] = [];
  private readonly waiting = new Map<string, Waiting>();
  private removers: Array<() => void> = [];
  private closed = false;
  /** Ends the provider's stream (set by whoever holds it): a provider removed here should not keep a stream open. */
  end?: () => void;

  constructor(
    readonly holder: ProviderHolder,
    /** `flow:<node id>` as the provider says, for audit reasons and logs. */
    readonly source: string,
    private readonly send: (e: ProviderEvent) => boolean,
  ) {}

  /** `flow:t1 of http:node-red`: the audit reason names the node and who provides it. */
  get label(): string {
    return `${this.source} of ${this.holder.principal}`;
  }

  get names(): string[] {
    return this.tools.map((t) => t.name);
  }

  get open(): boolean {
    return !this.closed;
  }

  /** @internal */
  attach(tool: GeneratedTool, remove: () => void): void {
    this.tools.push(tool);
    this.removers.push(remove);
  }

  /** The handler of one of this provider's tools: runs once the checks passed. */
  run(tool: string, timeoutMs: number, args: Record<string, unknown>, call: ToolCall): Promise<ToolResult> {
    return new Promise<ToolResult>((resolve, reject) => {
      if (this.closed) return reject(new Error(`the Node-RED flow that provides tool ${tool} disconnected; nothing was run`));
      const id = randomUUID();
      const onAbort = () => {
        if (!this.waiting.delete(id)) return;
        const reason = (call.signal.reason as { name?: string } | undefined)?.name === 'ExternalToolTimeout' ? 'timeout' : 'interrupted';
        this.send({ event: 'cancel', data: { id, tool, reason } });
        reject(call.signal.reason instanceof Error ? call.signal.reason : new Error(reason));
      };
      const done = () => call.signal.removeEventListener('abort', onAbort);
      this.waiting.set(id, {
        id,
        tool,
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      call.signal.addEventListener('abort', onAbort, { once: true });
      const sent = this.send({
        event: 'call',
        data: {
          id,
          tool,
          args,
          principal: call.principal.id,
          session: call.session,
          runId: call.runId,
          requestId: call.requestId,
          timeoutMs,
        },
      });
      if (!sent) {
        this.waiting.delete(id);
        done();
        reject(new Error(`the Node-RED flow that provides tool ${tool} disconnected before the call reached it; nothing was run`));
      }
    });
  }

  /** Settle a waiting call; false when no call waits under that id. */
  answer(id: string, result: ToolResultObject): { tool: string } | undefined {
    const w = this.waiting.get(id);
    if (!w) return undefined;
    this.waiting.delete(id);
    w.resolve(result);
    return { tool: w.tool };
  }

  has(id: string): boolean {
    return this.waiting.has(id);
  }

  /** How many calls wait for this provider's answer. */
  get pending(): number {
    return this.waiting.size;
  }

  /** Remove the tools at once and fail every waiting call (the stream dropped). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const remove of this.removers.splice(0)) remove();
    for (const w of [...this.waiting.values()]) {
      this.waiting.delete(w.id);
      w.reject(new Error(`the Node-RED flow that provides tool ${w.tool} disconnected before it answered`));
    }
    this.end?.();
  }
}

/** Every provider of one daemon, and who holds which tool name. */
export class FlowToolProviders {
  private readonly providers = new Set<FlowToolProvider>();

  constructor(
    private readonly external: ExternalTools,
    private readonly deps: ExternalToolDeps,
    /** Is this name a generated (device) tool's? */
    private readonly deviceTool: (name: string) => boolean,
    private readonly log: Logger,
    /** May this holder still provide tools? Asked at every call: a principal that lost the right loses its tools. */
    private readonly mayProvide: (holder: ProviderHolder) => boolean = () => true,
  ) {}

  /**
   * Add a provider and its tools, all or none. The same holder coming back
   * for the same source (a flow reconnecting before its old stream was seen
   * to drop) replaces its old provider; anyone else's name is a 409.
   */
  register(holder: ProviderHolder, source: string, defs: FlowToolDefinition[], send: (e: ProviderEvent) => boolean): FlowToolProvider {
    const replaced = [...this.providers].filter((p) => same(p.holder, holder) && p.source === source);
    const others = [...this.providers].filter((p) => !replaced.includes(p));
    if (others.filter((p) => same(p.holder, holder)).length >= MAX_PROVIDERS_PER_HOLDER)
      throw new FlowToolProviderError(`${holder.principal} holds ${MAX_PROVIDERS_PER_HOLDER} tool providers already, the most one token may`, 'too_many');
    defs.forEach((def, i) => {
      // Names differing only in letter case read as one tool to a model: taken is taken in any case.
      const folded = def.name.toLowerCase();
      const holderOf = others.find((p) => p.names.some((n) => n.toLowerCase() === folded));
      if (holderOf)
        throw new FlowToolProviderError(
          `tools[${i}].name: ${def.name} is already provided by ${holderOf.label}; choose another name`,
          'name_taken',
          `tools[${i}].name`,
        );
      if (this.deviceTool(def.name) || this.deviceTool(folded))
        throw new FlowToolProviderError(`tools[${i}].name: a device tool is already named ${def.name}; choose another name`, 'name_taken', `tools[${i}].name`);
      if (this.external.get(def.name) && !replaced.some((p) => p.names.includes(def.name)))
        throw new FlowToolProviderError(
          `tools[${i}].name: a host tool named ${def.name} is already declared; choose another name`,
          'name_taken',
          `tools[${i}].name`,
        );
    });
    for (const old of replaced) this.drop(old, 'replaced by the same flow reconnecting');
    const provider = new FlowToolProvider(holder, source, send);
    try {
      for (const def of defs) {
        const { validate, ...shape } = def;
        const tool = createExternalTool(
          { ...shape, source: provider.label, handler: (args, call) => this.dispatch(provider, def, args, call) },
          { ...this.deps, log: this.log.child({ tool: def.name }) },
          validate,
        );
        provider.attach(tool, this.external.add(tool));
      }
    } catch (err) {
      provider.close();
      if (err instanceof ExternalToolError) throw new FlowToolProviderError(err.message, err.code === 'name_taken' ? 'name_taken' : 'bad_request', 'tools');
      throw err;
    }
    this.providers.add(provider);
    this.log.info({ provider: provider.id, principal: holder.principal, source, tools: provider.names }, 'flow tools registered');
    return provider;
  }

  private dispatch(provider: FlowToolProvider, def: FlowToolDefinition, args: Record<string, unknown>, call: ToolCall): Promise<ToolResult> {
    if (!this.mayProvide(provider.holder)) {
      this.drop(provider, `${provider.holder.principal} may no longer provide tools`);
      return Promise.reject(new Error(`${provider.holder.principal}, which provides tool ${def.name}, may no longer provide tools; nothing was run`));
    }
    return provider.run(def.name, def.timeoutMs, args, call);
  }

  /** The stream of this provider ended: its tools go, its waiting calls fail. */
  drop(provider: FlowToolProvider, why = 'the stream ended'): void {
    if (!this.providers.delete(provider)) return;
    const pending = provider.pending;
    provider.close();
    this.log.info({ provider: provider.id, principal: provider.holder.principal, tools: provider.names, pending }, `flow tools removed: ${why}`);
  }

  /** Answer a call of one of this holder's providers; undefined when it has no such call waiting. */
  answer(holder: ProviderHolder, id: string, result: ToolResultObject): { tool: string } | undefined {
    for (const p of this.providers) if (same(p.holder, holder) && p.has(id)) return p.answer(id, result);
    return undefined;
  }

  /** The providers a holder sees: its own (owners see all when `all`). */
  list(holder: ProviderHolder, all: boolean): Array<{ id: string; source: string; principal: string; tools: string[]; pending: number }> {
    return [...this.providers]
      .filter((p) => all || same(p.holder, holder))
      .map((p) => ({ id: p.id, source: p.source, principal: p.holder.principal, tools: p.names, pending: p.pending }));
  }

  closeAll(): void {
    for (const p of [...this.providers]) this.drop(p, 'the server stopped');
  }
}
