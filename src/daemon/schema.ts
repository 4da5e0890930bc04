// The control protocol in one place: every method's params as a JSON schema (compiled once, checked by the
// server before a method runs, so a method sees only what it declares) and every answer's type (what a client
// gets back and may trust). Answers are data; how they read is the client's business (src/present helps).
import type { ValidateFunction } from 'ajv';
import type { Outcome } from '../audit/types.js';
import type { ImportReport } from '../devices/home/home-file.js';
import type { AreaJson, FloorJson, HomeDeviceJson } from '../devices/home/home-setup.js';
import { OUTCOMES } from '../audit/row.js';
import type { ApprovalJson } from '../present/approval.js';
import type { AuditRowJson } from '../present/audit-row.js';
import type { CallStatus } from '../present/outcome.js';
import type { RefusedClaimJson } from '../present/refused-claim.js';
import type { StateJson } from '../present/state.js';
import type { Explanation } from '../policy/engine.js';
import type { PolicyRule } from '../policy/rules.js';
import { createAjv } from '../util/ajv.js';
import { badParams } from './protocol.js';

type Schema = Record<string, unknown>;
const str = (maxLength = 1000): Schema => ({ type: 'string', maxLength });
const bool: Schema = { type: 'boolean' };
const strings: Schema = { type: 'array', items: { type: 'string', maxLength: 200 }, maxItems: 100 };
const whole = (minimum: number, maximum: number): Schema => ({ type: 'integer', minimum, maximum });
const object: Schema = { type: 'object' };
const time: Schema = { type: 'string', format: 'date-time' };
const params = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** Who a request acts as: a principal id, checked again by the method (cli:<user> when not given). */
const as = str(200);

/** Each method's params. A stream (chat, mcp) answers once, then the connection carries it. */
export const METHOD_PARAMS = {
  hello: params({ token: str(200), protocol: whole(1, 1000) }),
  devices: params({}),
  'devices.refused': params({}),
  'devices.forget': params({ device: str(300) }, ['device']),
  'devices.confirm-move': params({ device: str(300), to: str(1000) }, ['device']),
  sources: params({}),
  tools: params({ as }),
  'tools.stats': params({}),
  call: params({ tool: str(200), args: object, as, role: strings, image: bool }, ['tool']),
  approvals: params({ all: bool }),
  approve: params({ id: str(100), by: str(200) }, ['id']),
  deny: params({ id: str(100), by: str(200) }, ['id']),
  'audit.tail': params({
    lines: whole(1, 10_000),
    principal: str(200),
    entity: str(300),
    outcome: { enum: [...OUTCOMES] },
    since: time,
  }),
  'token.create': params({ name: str(200), role: strings, principal: str(200), area: str(200) }, ['name']),
  'token.list': params({}),
  'token.revoke': params({ name: str(200) }, ['name']),
  'memory.list': params({ principal: str(200), limit: whole(1, 100_000) }),
  'memory.forget': params({ principal: str(200), id: whole(1, Number.MAX_SAFE_INTEGER), all: bool }),
  'policy.list': params({}),
  'policy.add': params(
    {
      effect: { enum: ['allow', 'deny', 'confirm'] },
      subject: str(500),
      tool: str(),
      entity: str(),
      area: str(),
      kind: str(),
      deviceClass: str(),
      capability: { enum: ['read', 'actuator'] },
      action: str(),
      priority: whole(-1_000_000, 1_000_000),
      window: str(100),
      days: str(100),
      maxCalls: whole(1, Number.MAX_SAFE_INTEGER),
      per: whole(1, Number.MAX_SAFE_INTEGER),
      note: str(),
      fromArea: str(200),
    },
    ['effect', 'subject', 'action'],
  ),
  'policy.remove': params({ id: whole(1, Number.MAX_SAFE_INTEGER) }, ['id']),
  'policy.roles': params({ principal: str(200), roles: strings, clear: bool }),
  'policy.test': params({ principal: str(200), tool: str(200), args: object, role: strings, at: time, fromArea: str(200) }, ['principal', 'tool']),
  'home.devices': params({}),
  'home.areas': params({}),
  'home.floors': params({}),
  'home.device': params(
    {
      device: str(300),
      area: str(200),
      noArea: bool,
      resetArea: bool,
      create: bool,
      name: str(200),
      resetName: bool,
      aliases: strings,
      exposed: bool,
      resetExposed: bool,
    },
    ['device'],
  ),
  'home.entity': params({ entity: str(300), area: str(200), noArea: bool, resetArea: bool, create: bool, exposed: bool, resetExposed: bool }, ['entity']),
  'home.area': params({ op: { enum: ['add', 'update', 'remove'] }, area: str(200), name: str(200), floor: str(200), noFloor: bool, aliases: strings }, [
    'op',
    'area',
  ]),
  'home.floor': params(
    { op: { enum: ['add', 'update', 'remove'] }, floor: str(200), name: str(200), level: whole(-200, 200), noLevel: bool, aliases: strings },
    ['op', 'floor'],
  ),
  'home.export': params({}),
  'home.import': params({ text: str(900_000) }, ['text']),
  chat: params({ as, ask: bool, ephemeral: bool, session: str(200) }),
  mcp: params({ as, role: strings, setup: bool }),
} as const;

export type MethodName = keyof typeof METHOD_PARAMS;

// ---------------------------------------------------------------- params, as methods receive them

export interface CallParams {
  tool: string;
  args?: Record<string, unknown>;
  as?: string;
  role?: string[];
  /** Put the first image's bytes in the answer (base64). */
  image?: boolean;
}
export interface TailParams {
  lines?: number;
  principal?: string;
  entity?: string;
  outcome?: Outcome;
  since?: string;
}
export interface AddRuleParams {
  effect: 'allow' | 'deny' | 'confirm';
  subject: string;
  tool?: string;
  entity?: string;
  area?: string;
  kind?: string;
  deviceClass?: string;
  capability?: 'read' | 'actuator';
  action: string;
  priority?: number;
  window?: string;
  days?: string;
  maxCalls?: number;
  per?: number;
  note?: string;
  fromArea?: string;
}
export interface PolicyTestParams {
  principal: string;
  tool: string;
  args?: Record<string, unknown>;
  role?: string[];
  at?: string;
  fromArea?: string;
}
export interface HomeDeviceParams {
  device: string;
  area?: string;
  noArea?: boolean;
  resetArea?: boolean;
  create?: boolean;
  name?: string;
  resetName?: boolean;
  aliases?: string[];
  exposed?: boolean;
  resetExposed?: boolean;
}
export interface HomeEntityParams {
  entity: string;
  area?: string;
  noArea?: boolean;
  resetArea?: boolean;
  create?: boolean;
  exposed?: boolean;
  resetExposed?: boolean;
}
export interface HomeAreaParams {
  op: 'add' | 'update' | 'remove';
  area: string;
  name?: string;
  floor?: string;
  noFloor?: boolean;
  aliases?: string[];
}
export interface HomeFloorParams {
  op: 'add' | 'update' | 'remove';
  floor: string;
  name?: string;
  level?: number;
  noLevel?: boolean;
  aliases?: string[];
}
export interface ChatParams {
  as?: string;
  /** Ask the person before every action; without it, an action the policy allows outright is not asked about. */
  ask?: boolean;
  ephemeral?: boolean;
  session?: string;
}

// ---------------------------------------------------------------- answers

/** Where this home comes from (a client that asks for another runs on its own). */
export interface HomeShape {
  devices: string[];
  broker: string;
  demo: boolean;
  /** A digest of each setting section that changes answers (no secrets leave the daemon). */
  sections: Record<string, string>;
}
export interface HelloAnswer {
  name: 'hearth';
  version: string;
  protocol: number;
  pid: number;
  database: string;
  home: HomeShape;
}
export interface DeviceJson {
  id: string;
  /** The device's identity at its source (what a person's choices are kept by). */
  identity: string;
  name: string;
  area: string | null;
  floor: string | null;
  /** person: a person put it there; source: its source says so; null: no area. */
  areaFrom: 'person' | 'source' | null;
  /** A known area its name starts with, offered (never applied) when it has none. */
  suggestedArea: string | null;
  aliases: string[];
  manufacturer: string | null;
  model: string | null;
  source: string;
  /** Each entity's state, and how it reads in words. */
  entities: Array<StateJson & { words: string }>;
}
/** Where devices were looked for: what a client says when there are none. */
export interface SourcesAnswer {
  deviceFiles: { paths: string[]; read: number; problems: number };
  discovery: Record<'homeassistant' | 'zigbee2mqtt' | 'homie', { enabled: boolean; topic: string }>;
  demo: boolean;
}
export interface ToolSummary {
  name: string;
  capability: 'read' | 'actuator';
  description: string;
  /** The spec exactly as a model receives it (OpenAI function format, host__ prefix). */
  spec: unknown;
}
export interface ToolsAnswer {
  shape: string;
  tools: ToolSummary[];
}
export interface ToolsStatsAnswer {
  entities: number;
  shape: string;
  shapes: Array<{ shape: string; tools: number; tokens: number }>;
}
/** A call's result: its audit row and outcome, what the tool answered, and (asked for) the image. */
export interface CallAnswer {
  auditId: number | null;
  outcome: string | null;
  outcomeWord: string | null;
  /** What became of the call, in one word (present/outcome.ts): `hearth call`'s exit code follows it. */
  status: CallStatus;
  text: string | null;
  isError: boolean;
  error: string | null;
  /** Host-only detail (topic, latency, echo payload, auditId, outcome). */
  details: Record<string, unknown>;
  images: Array<{ mimeType: string; bytes: number }>;
  /** The first image's bytes, base64, when `image` was asked for. */
  image?: { mimeType: string; data: string };
}
export interface DecideAnswer {
  decision: 'approved' | 'denied';
  by: string;
  approval: ApprovalJson;
}
export interface TokenJson {
  name: string;
  principal: string;
  area: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  roles: string[];
}
export type TokenCreated = TokenJson & { secret: string };
export interface MemoryJson {
  id: number;
  principal: string;
  sessionId: string | null;
  prompt: string;
  text: string;
  createdAt: string;
}
export type RuleJson = PolicyRule & { description: string };
export interface RuleAdded {
  rule: RuleJson;
  /** Said when a built-in confirm rule still holds what this allow covers. */
  notes: string[];
  /** The command that removes it again. */
  undo: string;
}
export interface RuleRemoved {
  rule: RuleJson;
  /** The command that adds it back. */
  restore: string;
}
export interface PrincipalRoles {
  principal: string;
  roles: string[];
  changed?: 'set' | 'cleared';
}
export interface PolicyTestAnswer {
  request: {
    principal: string;
    tool: string;
    capability: string;
    action: string;
    entityId?: string;
    area?: string;
    kind?: string;
    deviceClass?: string;
    args: Record<string, unknown>;
    at: string;
    /** The time asked for (`at`), when one was. */
    atGiven: boolean;
  };
  decision: Explanation['decision'];
  roles: string[];
  notes: string[];
  rules: Array<{
    id: number;
    effect: string;
    priority: number;
    builtin: boolean;
    description: string;
    matched: boolean;
    decided: boolean;
    why: string;
  }>;
}

/** A device's move confirmed by a person: each entity, the topics it let go of and those it holds now. */
export interface ConfirmMoveAnswer {
  device: string;
  moved: Array<{ entity: string; from: string[]; to: string[] }>;
}

/** What each method answers. */
export interface Answers {
  hello: HelloAnswer;
  devices: DeviceJson[];
  'devices.refused': RefusedClaimJson[];
  'devices.forget': { device: string; forgotten: string[]; present?: true };
  'devices.confirm-move': ConfirmMoveAnswer;
  sources: SourcesAnswer;
  tools: ToolsAnswer;
  'tools.stats': ToolsStatsAnswer;
  call: CallAnswer;
  approvals: ApprovalJson[];
  approve: DecideAnswer;
  deny: DecideAnswer;
  'audit.tail': AuditRowJson[];
  'token.create': TokenCreated;
  'token.list': TokenJson[];
  'token.revoke': TokenJson;
  'memory.list': MemoryJson[];
  'memory.forget': { forgotten: number };
  'policy.list': RuleJson[];
  'policy.add': RuleAdded;
  'policy.remove': RuleRemoved;
  'policy.roles': PrincipalRoles[];
  'policy.test': PolicyTestAnswer;
  'home.devices': HomeDeviceJson[];
  'home.areas': AreaJson[];
  'home.floors': FloorJson[];
  'home.device': HomeDeviceJson;
  'home.entity': HomeDeviceJson;
  'home.area': AreaJson | { removed: string; devices: number };
  'home.floor': FloorJson | { removed: string; areas: number };
  'home.export': { text: string };
  'home.import': ImportReport;
  /** `examples`: things to say to this home, made of its own devices (none when the model does not know the home). */
  chat: { streaming: 'chat'; principal: string; engine: string; tools: number; session: string | null; examples: string[] };
  mcp: { streaming: 'mcp' };
}

// ---------------------------------------------------------------- checking params

const ajv = createAjv({ useDefaults: false });
const validators = new Map<string, ValidateFunction>();

function phrase(schema: Schema | undefined): string {
  if (!schema) return 'valid';
  if (Array.isArray(schema.enum)) return `one of ${(schema.enum as unknown[]).join(', ')}`;
  if (schema.format === 'date-time') return 'an ISO time (2026-12-04T07:30:00Z)';
  switch (schema.type) {
    case 'string':
      return `a string of at most ${schema.maxLength} characters`;
    case 'boolean':
      return 'a boolean';
    case 'integer':
      return `a whole number from ${schema.minimum} to ${schema.maximum}`;
    case 'object':
      return 'an object';
    case 'array':
      return `an array of strings (at most ${schema.maxItems})`;
    default:
      return 'valid';
  }
}

/** The params a method may run with, or a ControlError naming the param and what it must be. */
export function checkParams(method: string, given: Record<string, unknown>): Record<string, unknown> {
  const schema = (METHOD_PARAMS as Record<string, Schema>)[method];
  if (!schema) return given;
  // JSON clients may send null for "not given".
  const p = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== null && v !== undefined));
  let validate = validators.get(method);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(method, validate);
  }
  if (validate(p)) return p;
  const properties = schema.properties as Record<string, Schema>;
  const err = validate.errors![0];
  if (err.keyword === 'additionalProperties') {
    const extra = (err.params as { additionalProperty: string }).additionalProperty;
    throw badParams(`${method}: unknown param "${extra}" (known: ${Object.keys(properties).join(', ') || 'none'})`);
  }
  if (err.keyword === 'required') throw badParams(`${method}: param "${(err.params as { missingProperty: string }).missingProperty}" is required`);
  const name = err.instancePath.split('/')[1] ?? '';
  throw badParams(`${method}: param "${name}" must be ${phrase(properties[name])}`);
}

// ---------------------------------------------------------------- the chat stream
// After `chat` answers, each side sends JSON lines. The client says what the person typed and decided; the
// daemon sends the turn's events as they come. The command line renders them; any other client may.

export type PermissionAnswer = 'allow_once' | 'allow_always' | 'deny';

export type ChatClientMessage =
  | { say: string }
  | { permission: { requestId: string; decision: PermissionAnswer } }
  /** Stop the running turn (Ctrl+C). */
  | { interrupt: true }
  /** The person is done: the daemon says where the conversation is saved and closes. */
  | { bye: true };

export type ChatServerMessage =
  /**
   * An event of the running turn. A permission_request carries what the policy would decide without a person,
   * and `answered` when the daemon answered it itself (the policy allows it outright and `ask` was not given).
   */
  | { event: import('../agent/types.js').AgentEvent; preview?: { effect: string; reason: string }; answered?: PermissionAnswer }
  /** The turn ended. */
  | { turn: { stopReason: string; error: string | null } }
  /** A message the daemon could not take (a bad line, a late answer); `unsaid`: the last `say` started no turn. */
  | { problem: string; unsaid?: true }
  | { end: { session: string | null; saved: boolean } };

/** Longest line of the chat stream either side accepts. */
export const MAX_CHAT_LINE = 64 * 1024;
