// Homie 5 devices: <prefix>/5/<device>/$state and one retained JSON
// `$description` with the nodes and their properties (objects keyed by id;
// arrays of objects with an `id` are read too).
import { JsonLimitError, parseBoundedJson } from '../../../util/bounded-json.js';
import type { Skip } from '../zigbee2mqtt/skips.js';
import type { HomieDescription, HomieNode, HomieProperty } from './types.js';

const ID_RE = /^[a-z0-9][a-z0-9-]*$/i;
/** Largest `$description` read (a device with a hundred properties needs a few KiB). */
export const MAX_DESCRIPTION_BYTES = 256 * 1024;

export function v5Filters(prefix: string): string[] {
  return [`${prefix}/5/+/$state`, `${prefix}/5/+/$description`];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);

/** `{id: {...}}` or `[{id, ...}]` as [id, object] pairs. */
function entries(v: unknown): Array<[string, Obj]> {
  if (Array.isArray(v)) return v.filter(isObj).map((o) => [String(o.id ?? ''), o]);
  if (isObj(v)) return Object.entries(v).filter((e): e is [string, Obj] => isObj(e[1]));
  return [];
}

export function parseDescription(dev: string, payload: string): { description?: HomieDescription; skipped: Skip[] } {
  const skipped: Skip[] = [];
  let doc: unknown;
  try {
    doc = parseBoundedJson(payload, { maxChars: MAX_DESCRIPTION_BYTES });
  } catch (err) {
    if (!(err instanceof JsonLimitError)) throw err;
    const detail = err.reason === 'not_json' ? '$description is not JSON' : `$description is ${err.message}`;
    skipped.push({ what: dev, reason: err.reason === 'not_json' ? 'malformed' : err.reason, detail });
    return { skipped };
  }
  if (!isObj(doc)) {
    skipped.push({ what: dev, reason: 'malformed', detail: '$description is not a JSON object' });
    return { skipped };
  }
  const version = text(doc.homie);
  if (version && !version.startsWith('5.')) {
    skipped.push({ what: dev, reason: 'unsupported_version', detail: `$description says Homie ${version}, not 5.x` });
    return { skipped };
  }
  const nodes: HomieNode[] = [];
  for (const [nodeId, n] of entries(doc.nodes)) {
    if (!ID_RE.test(nodeId)) {
      skipped.push({ what: `${dev}/${nodeId}`, reason: 'bad_id', detail: `node id ${JSON.stringify(nodeId.slice(0, 40))} is not a Homie id` });
      continue;
    }
    const properties: HomieProperty[] = [];
    for (const [propId, p] of entries(n.properties)) {
      if (!ID_RE.test(propId)) {
        skipped.push({ what: `${dev}/${nodeId}/${propId}`, reason: 'bad_id', detail: `property id ${JSON.stringify(propId.slice(0, 40))} is not a Homie id` });
        continue;
      }
      properties.push({
        id: propId,
        name: text(p.name),
        datatype: text(p.datatype),
        format: text(p.format),
        settable: p.settable === true,
        retained: p.retained !== false,
        unit: text(p.unit),
      });
    }
    nodes.push({ id: nodeId, name: text(n.name), type: text(n.type), properties });
  }
  return { description: { version: 5, id: dev, name: text(doc.name), nodes }, skipped };
}
