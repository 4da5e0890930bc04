// The invariants a discovered entity must meet, the same ones a device file
// is held to (file-schema.ts, loader.ts) plus "an actuator offers at least one
// action". A discovery adapter drops an entity that fails, with the reason.
import { parseJsonPath } from '../../json-path.js';
import { ACTUATOR_KINDS, ENTITY_KINDS, type Entity, type Range } from '../../model.js';
import { actionsOf } from '../../actions.js';
import { DEVICE_ID_RE, isExactTopic, KEY_RE } from './naming.js';

const SENSOR_KINDS = new Set(['sensor', 'binary_sensor', 'camera', 'image', 'device_tracker', 'event']);

function rangeProblem(name: string, r: Range): string | undefined {
  if (!Number.isFinite(r.min) || !Number.isFinite(r.max)) return `range ${name} is not finite`;
  if (r.min >= r.max) return `range ${name}: min ${r.min} must be below max ${r.max}`;
  if (r.step !== undefined && !(Number.isFinite(r.step) && r.step > 0)) return `range ${name}: step ${r.step} must be above 0`;
  return undefined;
}

function pathProblem(what: string, path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  if (!path || path.length > 256) return `${what} must be 1 to 256 characters`;
  try {
    parseJsonPath(path);
  } catch (err) {
    return `${what}: ${(err as Error).message}`;
  }
  return undefined;
}

/** Why this entity would not load from a device file, or undefined when it is fine. */
export function entityProblem(e: Entity): string | undefined {
  if (!DEVICE_ID_RE.test(e.deviceId)) return `device id ${JSON.stringify(e.deviceId)} is not valid`;
  if (!KEY_RE.test(e.key)) return `key ${JSON.stringify(e.key)} is not valid`;
  if (e.id !== `${e.deviceId}.${e.key}`) return `id ${e.id} is not <device>.<key>`;
  if (!(ENTITY_KINDS as readonly string[]).includes(e.kind)) return `unknown kind ${e.kind}`;
  if (!e.name || e.name.length > 200) return 'name must be 1 to 200 characters';
  if (e.unit !== undefined && e.unit.length > 32) return 'unit is over 32 characters';
  if (e.deviceClass !== undefined && e.deviceClass.length > 64) return 'device class is over 64 characters';
  for (const t of [e.stateTopic, e.commandTopic, ...Object.values(e.commandTopics), ...Object.values(e.attributes).map((a) => a.topic)]) {
    if (t !== undefined && !isExactTopic(t)) return `topic ${JSON.stringify(t.slice(0, 80))} is not an exact topic`;
  }
  for (const s of e.availability?.sources ?? []) {
    if (!isExactTopic(s.topic)) return `availability topic ${JSON.stringify(s.topic.slice(0, 80))} is not an exact topic`;
    const p = pathProblem('availability path', s.path);
    if (p) return p;
  }
  const p = pathProblem('value path', e.valuePath);
  if (p) return p;
  for (const [name, a] of Object.entries(e.attributes)) {
    if (!KEY_RE.test(name)) return `attribute name ${JSON.stringify(name)} is not valid`;
    const ap = pathProblem(`attribute ${name} path`, a.path);
    if (ap) return ap;
  }
  for (const name of Object.keys(e.commandTopics)) if (!KEY_RE.test(name)) return `command topic name ${JSON.stringify(name)} is not valid`;
  for (const [name, r] of Object.entries(e.ranges)) {
    if (!KEY_RE.test(name)) return `range name ${JSON.stringify(name)} is not valid`;
    const rp = rangeProblem(name, r);
    if (rp) return rp;
  }
  for (const [name, list] of Object.entries(e.options)) {
    if (!KEY_RE.test(name)) return `option list name ${JSON.stringify(name)} is not valid`;
    if (!list.length) return `option list ${name} is empty`;
    if (list.some((o) => typeof o !== 'string' || !o)) return `option list ${name} holds an empty or non-text option`;
    if (new Set(list).size !== list.length) return `option list ${name} repeats an option`;
  }
  if (e.confirmTimeoutMs !== undefined && !(Number.isInteger(e.confirmTimeoutMs) && e.confirmTimeoutMs >= 100 && e.confirmTimeoutMs <= 600_000)) {
    return 'confirm timeout must be 100 to 600000 ms';
  }
  if (SENSOR_KINDS.has(e.kind) && !e.stateTopic) return `a ${e.kind} needs a state topic`;
  // A firmware update installed through the bridge (which Hearth never commands) is only read.
  if (ACTUATOR_KINDS.has(e.kind) && !(e.kind === 'update' && !e.commandTopic)) {
    if (
      e.kind === 'climate' || e.kind === 'lawn_mower' || e.kind === 'water_heater' ? !e.commandTopic && !Object.keys(e.commandTopics).length : !e.commandTopic
    )
      return `a ${e.kind} needs a command topic`;
    if (e.kind === 'select' && !e.options.value?.length) return 'a select needs options';
    if (e.kind === 'number' && !e.ranges.value) return 'a number needs a value range';
    if (!actionsOf(e).length) return `the ${e.kind} offers no action`;
  }
  return undefined;
}
