// Host tools generated from the device registry, in one of two shapes:
// per-entity (a tool per entity, for small homes) or grouped (a few tools per
// kind of device with an `entity` argument, plus find_entities), so that a
// home of hundreds of entities stays within a model's tool budget.
import { ACTUATOR_KINDS, type Entity, type EntityKind, FRAME_KINDS } from '../devices/model.js';
import { actuatorDescription, cameraDescription, DATA_NOTE, KIND_PLURALS, readDescription } from './descriptions.js';
import { GROUP_ACTIONS, GROUP_DESCRIPTION, GROUP_KINDS, GROUP_TOOL, groupParameters } from './group-call.js';
import { assignNames, baseToolName, type NameMemory } from './names.js';
import { schemaForModel } from './model-schema.js';
import { actionsOf, actuatorProperties } from './parameters.js';
import type { GeneratedTool, JsonSchema, ToolCall, ToolResultObject } from './types.js';

export type ToolShape = 'per-entity' | 'grouped';

/** What a tool does, for the pipeline. */
export type ToolTarget =
  | { type: 'read'; entityId: string }
  | { type: 'camera'; entityId?: string }
  | { type: 'state' }
  | { type: 'find' }
  | { type: 'history' }
  /** The audit (get_audit): only for a principal the policy lets read it (mayReadAudit). */
  | { type: 'audit' }
  /** What the policy decides for an action on an entity, and why (explain_policy). */
  | { type: 'policy' }
  | { type: 'actuate'; entityId?: string; kinds: EntityKind[] }
  /** ownTools: each member's own control tool, whose rules bind the member in a grouped call too. */
  | { type: 'group'; kinds: EntityKind[]; ownTools: ReadonlyMap<string, string> };

export type Invoke = (tool: GeneratedTool, target: ToolTarget, args: Record<string, unknown>, call: ToolCall) => Promise<ToolResultObject>;

export interface GenerateOptions {
  shape: 'auto' | ToolShape;
  /** With `auto`: group once there are more entities than this. */
  groupAbove: number;
  /** Above this many entities of a kind, grouped tools take a free `entity` string instead of an enum. */
  enumLimit?: number;
  /**
   * Names given before (SQLite, across restarts). With it, `entities` come in
   * rank order (DeviceRegistry.ranked()) and a name once given stays with its entity.
   */
  names?: NameMemory;
  /** Names other tools hold (tools a flow provides): no device tool is given one, so a newcomer never takes them. */
  reserved?: Iterable<string>;
  /** Keys (entity ids, `<id>#reading`) that keep their tool name though their name changed: their device's move waits for a person. */
  holdNames?: (key: string) => boolean;
}

const GROUPED_NAMES: Record<string, string> = {
  switch: 'control_switches',
  light: 'control_lights',
  cover: 'control_covers',
  lock: 'control_locks',
  climate: 'control_climate',
  number: 'control_numbers',
  select: 'control_selects',
  button: 'press_buttons',
  fan: 'control_fans',
  valve: 'control_valves',
  alarm_control_panel: 'control_alarms',
  scene: 'activate_scenes',
  vacuum: 'control_vacuums',
  lawn_mower: 'control_lawn_mowers',
  siren: 'control_sirens',
  update: 'install_updates',
  humidifier: 'control_humidifiers',
  water_heater: 'control_water_heaters',
  text: 'set_texts',
  notify: 'send_messages',
};

/** The grouped shape's tool names: Hearth's own, as get_state is. */
export const GROUPED_TOOL_NAMES: readonly string[] = Object.values(GROUPED_NAMES);

/** In the grouped shape, the tool that serves an entity of this kind. */
export function groupedToolFor(kind: EntityKind): string {
  if (FRAME_KINDS.has(kind)) return 'get_camera_image';
  return GROUPED_NAMES[kind] ?? 'get_state';
}

export function chooseShape(entityCount: number, options: GenerateOptions): ToolShape {
  if (options.shape !== 'auto') return options.shape;
  return entityCount > options.groupAbove ? 'grouped' : 'per-entity';
}

/** Kinds only read, each through a tool of its own in the per-entity shape. */
const READ_KINDS: ReadonlySet<EntityKind> = new Set(['sensor', 'binary_sensor', 'device_tracker', 'event']);

const EMPTY: JsonSchema = { type: 'object', properties: {}, additionalProperties: false };

function objectSchema(properties: Record<string, JsonSchema>, required: string[]): JsonSchema {
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

/**
 * The `entity` argument of a grouped tool: any id, checked when called. Its schema never lists the
 * entities: a grouped set's size must not grow with the home (find_entities finds the ids).
 */
function entityArg(): JsonSchema {
  return { type: 'string', maxLength: 200 };
}

/** The colour argument without its list of names (the per-entity tool lists them; any name is checked when called). */
const GROUPED_COLOR: JsonSchema = { type: 'string', maxLength: 32, description: 'A colour name (red, warm white...) or #rrggbb; only with turn_on.' };

/**
 * A grouped tool's argument for an option list (a select's options, a mode, a fan speed, a tone): any
 * word, checked against the entity's own options when called, with an error naming them. Listing the
 * union of every member's options grew with the home (hundreds of values, most meaningless for any one).
 */
function optionArg(description: string | undefined): JsonSchema {
  const what = description ? `${String(description).replace(/\.$/, '')}: ` : '';
  return {
    type: 'string',
    maxLength: 100,
    description: `${what}the entity's own (find_entities).`,
  };
}

export interface ToolSetBuild {
  shape: ToolShape;
  tools: GeneratedTool[];
}

/** Build the tool set. `invoke` is the handler pipeline every tool calls. */
export function generateTools(entities: Entity[], options: GenerateOptions, invoke: Invoke): ToolSetBuild {
  const shape = chooseShape(entities.length, options);
  const enumLimit = options.enumLimit ?? 100;
  const sorted = [...entities].sort((a, b) => (a.id < b.id ? -1 : 1));
  const tools: GeneratedTool[] = [];
  const make = (
    name: string,
    description: string,
    parameters: JsonSchema,
    capability: 'read' | 'actuator',
    target: ToolTarget,
    meta: GeneratedTool['meta'],
  ) => {
    const tool: GeneratedTool = {
      name,
      description,
      parameters: schemaForModel(parameters),
      argumentSchema: parameters,
      capability,
      meta,
      handler: (args, call) => invoke(tool, target, args, call),
      recordsRefusals: true,
    };
    tools.push(tool);
  };

  // Both shapes: read any entity's state, by id or area.
  make(
    'get_state',
    'Get the current state of devices: by entity id, by area, or everything when no argument is given. ' +
      'One line per entity: its value, when it was reported, whether it is online. ' +
      DATA_NOTE,
    objectSchema(
      {
        entity:
          // Grouped: never the list (the schema would grow with the home).
          shape === 'per-entity' && sorted.length <= enumLimit
            ? { type: 'string', enum: sorted.map((e) => e.id), description: 'One entity id.' }
            : { type: 'string', minLength: 1, maxLength: 200, description: 'One entity id (see find_entities).' },
        area: { type: 'string', minLength: 1, maxLength: 100, description: 'All entities in this area.' },
      },
      [],
    ),
    'read',
    { type: 'state' },
    { entityIds: sorted.map((e) => e.id), kinds: [...new Set(sorted.map((e) => e.kind))], actions: [] },
  );

  // Both shapes: an entity's recorded history (src/history), same read check as get_state.
  make(
    'get_history',
    "One entity's recorded history: when it changed (newest first), or a sensor's low, high, average and samples over a " +
      'time range ("when did ... last ...?", "how warm was it this morning?"). Times are UTC. ' +
      DATA_NOTE,
    objectSchema(
      {
        entity:
          // Grouped: never the list (the schema would grow with the home).
          shape === 'per-entity' && sorted.length <= enumLimit
            ? { type: 'string', enum: sorted.map((e) => e.id), description: 'One entity id.' }
            : { type: 'string', minLength: 1, maxLength: 200, description: 'One entity id (see find_entities).' },
        since: {
          type: 'string',
          maxLength: 40,
          description: 'Start: ISO 8601 (UTC unless an offset is given) or back from now: -3h, 90m, 7d. Default 24 h ago.',
        },
        until: { type: 'string', maxLength: 40, description: 'End, same forms. Default now.' },
      },
      ['entity'],
    ),
    'read',
    { type: 'history' },
    { entityIds: sorted.map((e) => e.id), kinds: [...new Set(sorted.map((e) => e.kind))], actions: [] },
  );

  // Both shapes: the audit and the policy, read (issue 42). Neither names an entity in an enum.
  const entityText = (d: string) => ({ type: 'string', minLength: 1, maxLength: 200, description: d }) as JsonSchema;
  make(
    'get_audit',
    'The audit log, newest first: who asked for what on which device, when, and what came of it (held, denied, confirmed, ' +
      'unconfirmed, not sent, failed): "who unlocked the front door today?". Only for callers allowed to read it. Times are UTC. ' +
      DATA_NOTE,
    objectSchema(
      {
        entity: entityText('Only this entity id.'),
        action: { type: 'string', minLength: 1, maxLength: 40, description: 'Only this action (unlock, turn_on, ...).' },
        principal: { type: 'string', minLength: 1, maxLength: 120, description: 'Only this principal (an id such as chat:anna, or a name).' },
        since: { type: 'string', maxLength: 40, description: 'Start: ISO 8601 or back from now: -1h, 7d. Default 24 h ago.' },
        until: { type: 'string', maxLength: 40, description: 'End, same forms. Default now.' },
      },
      [],
    ),
    'read',
    { type: 'audit' },
    { entityIds: [], kinds: [], actions: [] },
  );
  make(
    'explain_policy',
    'What the policy decides now for an action on an entity, and by which rule: "why can\'t I unlock the front door?", ' +
      '"who may open the garage?". For the caller unless `for` is given. Never acts. ' +
      DATA_NOTE,
    objectSchema(
      {
        entity: entityText('The entity id.'),
        action: { type: 'string', minLength: 1, maxLength: 40, description: 'unlock, open, turn_on, set_temperature, read, ...' },
        for: { type: 'string', minLength: 1, maxLength: 120, description: 'Owners only: a principal id or name, or * for everyone.' },
      },
      ['entity', 'action'],
    ),
    'read',
    { type: 'policy' },
    { entityIds: [], kinds: [], actions: [] },
  );

  // Both shapes, last (an entity's own tool comes first wherever tools are searched by entity):
  // many lights, switches or fans on or off in one call ("all lights off").
  const addGroupTool = () => {
    const groupable = sorted.filter((e) => GROUP_KINDS.includes(e.kind));
    const groupSchema = groupParameters(groupable);
    if (!groupSchema) return;
    const kinds = [...new Set(groupable.map((e) => e.kind))];
    const ownTools = new Map<string, string>();
    for (const t of tools) if (t.capability === 'actuator') for (const id of t.meta.entityIds) if (!ownTools.has(id)) ownTools.set(id, t.name);
    make(
      GROUP_TOOL,
      `${GROUP_DESCRIPTION} ${DATA_NOTE}`,
      groupSchema,
      'actuator',
      { type: 'group', kinds, ownTools },
      {
        entityIds: groupable.map((e) => e.id),
        kinds,
        actions: [...GROUP_ACTIONS],
        group: true,
      },
    );
  };

  if (shape === 'per-entity') {
    const wanted: Array<{ key: string; base: string }> = [];
    for (const e of options.names ? entities : sorted) {
      if (ACTUATOR_KINDS.has(e.kind) || READ_KINDS.has(e.kind) || FRAME_KINDS.has(e.kind)) {
        wanted.push({ key: e.id, base: baseToolName(e.toolBase ?? e.name, e.id) });
      }
      if (e.kind === 'climate') wanted.push({ key: `${e.id}#reading`, base: baseToolName(`${e.toolBase ?? e.name} reading`, `${e.id}_reading`) });
    }
    const names = assignNames(
      wanted,
      ['get_state', 'get_history', 'get_audit', 'explain_policy', 'find_entities', 'get_camera_image', GROUP_TOOL, ...(options.reserved ?? [])],
      options.names,
      options.holdNames,
    );
    for (const e of sorted) {
      const name = names.get(e.id);
      if (!name) continue;
      const meta = { entityIds: [e.id], kinds: [e.kind], actions: [] as string[] };
      if (FRAME_KINDS.has(e.kind)) {
        make(name, cameraDescription(e), EMPTY, 'read', { type: 'camera', entityId: e.id }, meta);
      } else if (READ_KINDS.has(e.kind) || !actionsOf(e).length) {
        make(name, readDescription(e), EMPTY, 'read', { type: 'read', entityId: e.id }, meta);
      } else {
        const { properties, required } = actuatorProperties(e);
        make(
          name,
          actuatorDescription(e),
          objectSchema(properties, required),
          'actuator',
          { type: 'actuate', entityId: e.id, kinds: [e.kind] },
          {
            ...meta,
            actions: actionsOf(e),
          },
        );
        if (e.kind === 'climate') {
          make(names.get(`${e.id}#reading`)!, readDescription(e), EMPTY, 'read', { type: 'read', entityId: e.id }, meta);
        }
      }
    }
    addGroupTool();
    return { shape, tools };
  }

  // Grouped: find_entities, one camera tool, one control tool per actuator kind.
  make(
    'find_entities',
    "Search the home's devices by words of their name, by area or by kind. Returns matching entity ids with name, area, kind " +
      'and which tool controls them. Use it before acting on a device whose id you do not know. ' +
      DATA_NOTE,
    objectSchema(
      {
        query: { type: 'string', maxLength: 100, description: 'Words of the name, e.g. "kitchen light".' },
        area: { type: 'string', maxLength: 100 },
        kind: { enum: [...new Set(sorted.map((e) => e.kind))] },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
      },
      [],
    ),
    'read',
    { type: 'find' },
    { entityIds: sorted.map((e) => e.id), kinds: [...new Set(sorted.map((e) => e.kind))], actions: [] },
  );
  const cameras = sorted.filter((e) => FRAME_KINDS.has(e.kind));
  if (cameras.length) {
    make(
      'get_camera_image',
      `Look through a camera: returns its latest frame as an image, with the time it was taken. ${DATA_NOTE}`,
      objectSchema({ camera: { ...entityArg(), description: 'Camera entity id (find_entities).' } }, ['camera']),
      'read',
      { type: 'camera' },
      { entityIds: cameras.map((e) => e.id), kinds: [...new Set(cameras.map((e) => e.kind))], actions: [] },
    );
  }
  const byKind = new Map<EntityKind, Entity[]>();
  for (const e of sorted) {
    // An actuator with nothing it can be sent (an update without install) is read with get_state.
    if (!ACTUATOR_KINDS.has(e.kind) || !actionsOf(e).length) continue;
    const list = byKind.get(e.kind);
    if (list) list.push(e);
    else byKind.set(e.kind, [e]);
  }
  for (const [kind, list] of byKind) {
    // Union of the members' arguments; each member's own range is checked when called.
    const props: Record<string, JsonSchema> = {};
    const actions = new Set<string>();
    for (const e of list) {
      for (const [k, schema] of Object.entries(actuatorProperties(e).properties)) {
        const prev = props[k];
        // Actions are the kind's few verbs; any other list is the entity's own, said by find_entities and get_state.
        if (k !== 'action' && Array.isArray(schema.enum)) {
          props[k] ??= optionArg(schema.description as string | undefined);
          continue;
        }
        if (!prev) props[k] = k === 'color' ? GROUPED_COLOR : { ...schema };
        else if (Array.isArray(prev.enum) && Array.isArray(schema.enum)) prev.enum = [...new Set([...(prev.enum as string[]), ...(schema.enum as string[])])];
        else if (typeof prev.minimum === 'number' && typeof schema.minimum === 'number') {
          prev.minimum = Math.min(prev.minimum, schema.minimum);
          prev.maximum = Math.max(prev.maximum as number, schema.maximum as number);
          if (prev.type !== schema.type) prev.type = 'number';
          delete prev.multipleOf;
          // Once: merging a further member must not append the note again (it grew with every entity).
          const note = '; per-device range.';
          const head = (d: unknown) => String(d).split(/,|; per-device/)[0]!;
          // Members in different units (a number in °C beside one in seconds): the unit is each entity's own.
          const said = head(prev.description) === head(schema.description) ? head(prev.description) : head(prev.description).replace(/ in .*$/, '');
          prev.description = `${said}${note}`;
        }
      }
      for (const a of actionsOf(e)) actions.add(a);
    }
    const required = [
      'entity',
      ...(props.action ? ['action'] : []),
      ...(kind === 'number' ? ['value'] : kind === 'select' ? ['option'] : kind === 'text' ? ['text'] : kind === 'notify' ? ['message'] : []),
    ];
    const noun = KIND_PLURALS[kind] ?? kind;
    make(
      groupedToolFor(kind),
      // Short: one of these per kind is in every grouped set, whatever the home. It names no device (the
      // read tools, which return device data, carry the data note), and its results say what "confirmed" means.
      `Control ${noun}: ${[...actions].join(', ')}.`,
      objectSchema({ entity: entityArg(), ...props }, required),
      'actuator',
      { type: 'actuate', kinds: [kind] },
      { entityIds: list.map((e) => e.id), kinds: [kind], actions: [...actions] },
    );
  }
  addGroupTool();
  return { shape, tools };
}

/** OpenAI function specs exactly as a model receives them. */
export function toolSpecs(tools: Array<{ name: string; description: string; parameters: JsonSchema }>) {
  return tools.map((t) => ({ type: 'function' as const, function: { name: `host__${t.name}`, description: t.description, parameters: t.parameters } }));
}

/** The kit's rough token estimate: characters of the JSON specs / 4. */
export function estimateTokens(specs: unknown): number {
  return Math.ceil(JSON.stringify(specs).length / 4);
}
