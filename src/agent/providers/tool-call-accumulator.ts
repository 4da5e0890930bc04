// Assembles streamed `delta.tool_calls` fragments into whole tool calls, coping
// with the ways OpenAI-compatible servers differ (recorded streams of each are in
// test/fixtures/openai/):
//
//  - OpenAI: `index` 0, 1, … (possibly interleaved); `id` + `name` on the first
//    fragment of each call, then `arguments` pieces only.
//  - Ollama: each call whole in one fragment, but parallel calls may all say
//    `index: 0`, each with its own `id`  -> a new non-empty id at an occupied
//    index opens a new slot.
//  - llama.cpp: `id` / `name` only on the first fragment (arguments "" there).
//  - LM Studio (and vLLM, DashScope): `name: ""` and/or `id: ""` on
//    continuations  -> "" is "not given": it never overwrites, never opens a slot.
//  - Proxies (and sglang) that repeat the same `id` on every fragment  -> the
//    same id is the same call, wherever it appears.
//  - Missing `index`  -> 0, with the same id rules.
//  - Missing `id`  -> invented as `call_<n>`, stable within the response.
//  - `arguments` kept as the raw concatenated text (parsed by whoever runs the
//    call); `""` becomes `"{}"`. An object (some proxies) is serialised.
//  - `finish_reason` is not consulted at all.
//
// Events: `tool_call_started` once a slot has its name (with its final id), then
// `tool_call_args_delta` for each argument fragment (fragments that arrived
// before the name are flushed right after `tool_call_started`).

import type { ToolCallRequest } from '../provider.js';

/** One element of `choices[].delta.tool_calls`, as loosely as servers send it. */
export interface ToolCallDelta {
  index?: number | null;
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: unknown } | null;
}

export type ToolCallEvent = { type: 'tool_call_started'; id: string; name: string } | { type: 'tool_call_args_delta'; id: string; delta: string };

interface Slot {
  index: number;
  /** The id the server gave, '' while none. */
  serverId: string;
  /** The id we expose; fixed when the slot starts. */
  id: string;
  name: string;
  args: string;
  started: boolean;
  /** Argument text received before the name, not yet emitted. */
  pending: string;
}

export class ToolCallAccumulator {
  private readonly slots: Slot[] = [];
  private readonly byIndex = new Map<number, Slot>();
  private readonly byServerId = new Map<string, Slot>();
  private readonly usedIds = new Set<string>();
  private invented = 0;

  /** How many slots were opened so far (named or not). */
  get size(): number {
    return this.slots.length;
  }

  /** Feed `delta.tool_calls` (anything; non-arrays and junk elements are ignored). */
  pushAll(toolCalls: unknown): ToolCallEvent[] {
    if (!Array.isArray(toolCalls)) return [];
    const out: ToolCallEvent[] = [];
    for (const tc of toolCalls) {
      if (tc && typeof tc === 'object') out.push(...this.push(tc as ToolCallDelta));
    }
    return out;
  }

  /** Feed one fragment. */
  push(delta: ToolCallDelta): ToolCallEvent[] {
    const index = typeof delta.index === 'number' && Number.isInteger(delta.index) && delta.index >= 0 ? delta.index : 0;
    const id = typeof delta.id === 'string' ? delta.id : typeof delta.id === 'number' ? String(delta.id) : '';
    const fn = delta.function && typeof delta.function === 'object' ? delta.function : undefined;
    const name = typeof fn?.name === 'string' ? fn.name : '';
    const args = argumentsText(fn?.arguments);

    const slot = this.slotFor(index, id, name, args);
    const out: ToolCallEvent[] = [];

    if (id && !slot.serverId) {
      slot.serverId = id;
      if (!this.byServerId.has(id)) this.byServerId.set(id, slot);
      // An id that arrives after the call started cannot change what was already
      // announced; the announced id stays (it is only an echo key for the server).
      if (!slot.started) slot.id = id;
    }

    if (args) {
      slot.args += args;
      if (slot.started) out.push({ type: 'tool_call_args_delta', id: slot.id, delta: args });
      else slot.pending += args;
    }

    if (name && !slot.name) {
      slot.name = name;
      this.start(slot, out);
    }
    return out;
  }

  /**
   * The calls, in the order they were opened. Slots that never got a name are
   * left out (they cannot be run); see `unnamed()`.
   */
  finish(): ToolCallRequest[] {
    const calls: ToolCallRequest[] = [];
    for (const slot of this.slots) {
      if (!slot.name) continue;
      if (!slot.started) this.start(slot, []);
      calls.push({ id: slot.id, name: slot.name, arguments: slot.args.trim() === '' ? '{}' : slot.args });
    }
    return calls;
  }

  /** Slots that received fragments but never a name (dropped by finish()). */
  unnamed(): { index: number; id: string; arguments: string }[] {
    return this.slots.filter((s) => !s.name).map((s) => ({ index: s.index, id: s.serverId, arguments: s.args }));
  }

  private slotFor(index: number, id: string, name: string, args: string): Slot {
    // The same server id is the same call, whatever index it comes with.
    if (id) {
      const known = this.byServerId.get(id);
      if (known) return known;
    }
    const current = this.byIndex.get(index);
    if (!current) return this.open(index);
    if (id) {
      // A different id at an occupied index: Ollama's parallel calls at index 0.
      if (current.serverId) return this.open(index);
      // The slot has no id yet: a late id for the same call, unless both the
      // slot and this fragment carry a name (a second call sent whole).
      if (current.name && name) return this.open(index);
      return current;
    }
    // No id at all. A name at a slot that already has one is either a repeat
    // (some proxies resend the name on every fragment) or a new call from a
    // server that sends no ids. It is a new call when appending could only
    // corrupt the slot: a different name after empty/complete arguments, or
    // more arguments after already complete ones.
    if (name && current.name) {
      if (name !== current.name && (current.args.trim() === '' || isCompleteJson(current.args))) return this.open(index);
      if (name === current.name && args.trim() !== '' && isCompleteJson(current.args)) return this.open(index);
    }
    return current;
  }

  private open(index: number): Slot {
    const slot: Slot = { index, serverId: '', id: '', name: '', args: '', started: false, pending: '' };
    this.slots.push(slot);
    this.byIndex.set(index, slot);
    return slot;
  }

  private start(slot: Slot, out: ToolCallEvent[]): void {
    if (!slot.id || this.usedIds.has(slot.id)) slot.id = this.inventId();
    this.usedIds.add(slot.id);
    slot.started = true;
    out.push({ type: 'tool_call_started', id: slot.id, name: slot.name });
    if (slot.pending) {
      out.push({ type: 'tool_call_args_delta', id: slot.id, delta: slot.pending });
      slot.pending = '';
    }
  }

  private inventId(): string {
    for (;;) {
      const id = `call_${this.invented++}`;
      if (!this.usedIds.has(id) && !this.byServerId.has(id)) return id;
    }
  }
}

function argumentsText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') return JSON.stringify(value);
  return '';
}

function isCompleteJson(text: string): boolean {
  const t = text.trim();
  if (!t) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}
