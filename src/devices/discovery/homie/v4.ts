// Homie 4 (and 3) devices, gathered from their retained attribute topics:
//   <prefix>/<device>/$homie|$name|$state|$nodes
//   <prefix>/<device>/<node>/$name|$type|$properties
//   <prefix>/<device>/<node>/<property>/$name|$datatype|$format|$settable|$retained|$unit
// An empty retained payload clears an attribute; a device with neither
// $homie nor $state left is gone.
import type { Skip } from '../zigbee2mqtt/skips.js';
import type { HomieDescription, HomieNode } from './types.js';

const DEVICE_ATTRS = new Set(['$homie', '$name', '$state', '$nodes']);
const NODE_ATTRS = new Set(['$name', '$type', '$properties']);
const PROPERTY_ATTRS = new Set(['$name', '$datatype', '$format', '$settable', '$retained', '$unit']);
const ID_RE = /^[a-z0-9][a-z0-9-]*$/i;
/** Most Homie 4 devices, nodes per device and properties per node remembered: attribute topics are anyone's to invent. */
export const MAX_V4_DEVICES = 2_000;
export const MAX_V4_NODES = 256;
export const MAX_V4_PROPERTIES = 256;

/** An attribute that would grow the tree past a limit; the message is refused. */
export class HomieLimitError extends Error {}

interface RawNode {
  attrs: Map<string, string>;
  props: Map<string, Map<string, string>>;
}

interface RawDevice {
  attrs: Map<string, string>;
  nodes: Map<string, RawNode>;
}

/** The topic filters that carry v4 attributes. */
export function v4Filters(prefix: string): string[] {
  return [
    ...[...DEVICE_ATTRS].map((a) => `${prefix}/+/${a}`),
    ...[...NODE_ATTRS].map((a) => `${prefix}/+/+/${a}`),
    ...[...PROPERTY_ATTRS].map((a) => `${prefix}/+/+/+/${a}`),
  ];
}

export class HomieV4Tree {
  private readonly devices = new Map<string, RawDevice>();

  /**
   * Record one attribute message (`levels` is the topic below the prefix).
   * Returns the device id it concerns, or undefined when it is not a v4 attribute.
   */
  apply(levels: string[], payload: string): string | undefined {
    const attr = levels[levels.length - 1];
    if (!attr?.startsWith('$') || levels.length < 2 || levels.length > 4) return undefined;
    const [dev] = levels;
    // `<prefix>/5/...` is Homie 5's namespace.
    if (dev === '5' || !ID_RE.test(dev)) return undefined;
    const value = payload.trim();
    let d = this.devices.get(dev);
    if (!d) {
      if (!value) return undefined;
      if (this.devices.size >= MAX_V4_DEVICES) throw new HomieLimitError(`more than ${MAX_V4_DEVICES} Homie 4 devices`);
      this.devices.set(dev, (d = { attrs: new Map(), nodes: new Map() }));
    }
    if (levels.length === 2) {
      if (!DEVICE_ATTRS.has(attr)) return undefined;
      setOrClear(d.attrs, attr, value);
    } else {
      const nodeId = levels[1];
      let n = d.nodes.get(nodeId);
      if (!n) {
        if (d.nodes.size >= MAX_V4_NODES) throw new HomieLimitError(`device ${dev} has more than ${MAX_V4_NODES} nodes`);
        d.nodes.set(nodeId, (n = { attrs: new Map(), props: new Map() }));
      }
      if (levels.length === 3) {
        if (!NODE_ATTRS.has(attr)) return undefined;
        setOrClear(n.attrs, attr, value);
      } else {
        if (!PROPERTY_ATTRS.has(attr)) return undefined;
        let p = n.props.get(levels[2]);
        if (!p) {
          if (n.props.size >= MAX_V4_PROPERTIES) throw new HomieLimitError(`node ${dev}/${nodeId} has more than ${MAX_V4_PROPERTIES} properties`);
          n.props.set(levels[2], (p = new Map()));
        }
        setOrClear(p, attr, value);
      }
    }
    // Clearing the last of $homie and $state removes the device (attributes may arrive before them, so only on a clear).
    if (!value && !d.attrs.get('$homie') && !d.attrs.get('$state')) this.devices.delete(dev);
    return dev;
  }

  state(dev: string): string | undefined {
    return this.devices.get(dev)?.attrs.get('$state');
  }

  has(dev: string): boolean {
    return this.devices.has(dev);
  }

  ids(): string[] {
    return [...this.devices.keys()];
  }

  /**
   * The device as described so far, with reasons for what cannot be used, and (Homie 4) the properties its nodes
   * list that have no $datatype yet.
   */
  describe(dev: string): { description?: HomieDescription; skipped: Skip[]; noDatatype?: Array<{ node: string; property: string }> } {
    const d = this.devices.get(dev);
    const skipped: Skip[] = [];
    const noDatatype: Array<{ node: string; property: string }> = [];
    if (!d) return { skipped };
    if (!d.attrs.get('$homie') && !d.attrs.get('$state')) {
      skipped.push({ what: dev, reason: 'incomplete', detail: 'it has announced neither $homie nor $state' });
      return { skipped };
    }
    const version = d.attrs.get('$homie') ?? '';
    const major = Number(version.split('.')[0]);
    if (version && major !== 3 && major !== 4) {
      skipped.push({ what: dev, reason: 'unsupported_version', detail: `Homie ${version} is not 3.x or 4.x` });
      return { skipped };
    }
    const nodeList = d.attrs.get('$nodes');
    if (nodeList === undefined) {
      skipped.push({ what: dev, reason: 'incomplete', detail: 'it has not announced $nodes yet' });
      return { skipped };
    }
    // Homie 4 requires a property's $datatype, and it decides how every value is read (`true` is `on` for a
    // boolean, text for a string): a property is described once it has come, never first as text. A value read
    // as text would stay so after the datatype came (its retained copy is not sent again); a property described
    // late is subscribed then, and the broker sends its retained value afresh. Homie 3 defaults it to string.
    const datatypeRequired = major !== 3;
    const nodes: HomieNode[] = [];
    for (const raw of list(nodeList)) {
      if (raw.endsWith('[]')) {
        skipped.push({ what: `${dev}/${raw}`, reason: 'node_array', detail: `node ${raw} is a Homie 3 node array, which Hearth does not expand` });
        continue;
      }
      const n = d.nodes.get(raw);
      const props = n?.attrs.get('$properties');
      if (!n || props === undefined) {
        skipped.push({ what: `${dev}/${raw}`, reason: 'incomplete', detail: `node ${raw} has not announced $properties yet` });
        continue;
      }
      const node: HomieNode = { id: raw, name: n.attrs.get('$name'), type: n.attrs.get('$type'), properties: [] };
      for (const pid of list(props)) {
        const p = n.props.get(pid) ?? new Map<string, string>();
        if (datatypeRequired && p.get('$datatype') === undefined) {
          skipped.push({ what: `${dev}/${raw}/${pid}`, reason: 'incomplete', detail: `property ${raw}/${pid} has not announced $datatype yet` });
          noDatatype.push({ node: raw, property: pid });
          continue;
        }
        node.properties.push({
          id: pid,
          name: p.get('$name'),
          datatype: p.get('$datatype'),
          format: p.get('$format'),
          settable: p.get('$settable') === 'true',
          retained: p.get('$retained') !== 'false',
          unit: p.get('$unit'),
        });
      }
      nodes.push(node);
    }
    return { description: { version: 4, id: dev, name: d.attrs.get('$name'), nodes }, skipped, noDatatype };
  }
}

function setOrClear(map: Map<string, string>, key: string, value: string): void {
  if (value) map.set(key, value);
  else map.delete(key);
}

/** `a,b,c` with ids only (empty and malformed entries dropped). */
function list(text: string): string[] {
  return [
    ...new Set(
      text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => ID_RE.test(s.replace(/\[\]$/, ''))),
    ),
  ];
}
