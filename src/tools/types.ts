// The host-tool contract of the Jan agent kit, as Hearth implements it.
// A tool is {name, description, parameters, capability, handler}; a handler
// gets the validated arguments and a call context, and returns a string or a
// result object whose `details` never reach the model.

import type { Capability, Principal } from '../core/principal.js';

export type { Capability };

export interface ImagePart {
  /** Base64 data URL (`data:image/jpeg;base64,...`). */
  url: string;
  mimeType: string;
  bytes: number;
}

export interface ToolResultObject {
  text?: string;
  images?: ImagePart[];
  /** Host-only data (topic, latency, echo payload): never sent to a model. */
  details?: Record<string, unknown>;
  error?: string;
  isError?: boolean;
}

export type ToolResult = string | ToolResultObject;

/** Who is asking (src/core/principal.ts). */
export type { Principal };

export interface ToolCall {
  requestId: string;
  toolName: string;
  /** Set when a delegated child made the call, else null. */
  runId: string | null;
  /** Session id, when the call comes from an agent session. */
  session: string | null;
  signal: AbortSignal;
  principal: Principal;
  /**
   * A person's yes to exactly this call, given in band (a session's
   * allow_once), in words for the audit. It satisfies a confirm rule only
   * when `approvedBy` (default: the caller's principal) may grant approvals
   * (PolicyEngine.mayApprove); otherwise the call is held as an approval.
   */
  approvalId?: string;
  /** Who gave approvalId, when the door knows it was not the caller's principal. */
  approvedBy?: Principal;
  /**
   * A person refused this call when asked (why, in words). A handler with
   * `recordsRefusals` writes the refused attempt to the audit and does nothing.
   */
  refused?: string;
}

export type ToolHandler = (args: Record<string, unknown>, call: ToolCall) => Promise<ToolResult> | ToolResult;

export interface HostTool {
  name: string;
  description: string;
  parameters: JsonSchema;
  capability: Capability;
  handler: ToolHandler;
  /** The handler takes ToolCall.refused: it records the refused attempt (audit) and does nothing else. */
  recordsRefusals?: boolean;
  /**
   * What the arguments are checked against, when it says more than `parameters` tells a model (bounds that only
   * guard the host: tools/model-schema.ts). Never sent to a model.
   */
  argumentSchema?: JsonSchema;
}

export type JsonSchema = Record<string, unknown>;

/** What a tool stands for: used by policy, audit and the front doors, never sent to a model. */
export interface ToolMeta {
  /** Entities this tool can act on or read (one for per-entity tools, many for grouped ones). */
  entityIds: string[];
  /** Entity kind(s) it covers. */
  kinds: string[];
  /** Actions it can take (`turn_on`, `unlock`, `open`...), empty for reads. */
  actions: string[];
  /** A grouped call over many entities (control_group): never "the tool" of any one of them, even with one member. */
  group?: boolean;
}

export interface GeneratedTool extends HostTool {
  meta: ToolMeta;
}

/** The kit's image limits (handshake `input_content_parts`). */
export const IMAGE_LIMITS = {
  mimeTypes: ['image/png', 'image/jpeg', 'image/gif', 'image/webp'],
  maxImageBytes: 5 * 1024 * 1024,
  maxMessageImageBytes: 10 * 1024 * 1024,
  maxImages: 8,
} as const;
