// `mqtt.url` may name several nodes of one clustered broker, comma-separated
// (`mqtt://a:1883,mqtt://b:1883`). MQTT.js takes them as `servers` and moves to
// the next node on every reconnect, so a dead node is left for a live one.
import type { IClientOptions } from 'mqtt';

const DEFAULT_PORTS: Record<string, number> = { mqtt: 1883, tcp: 1883, mqtts: 8883, ssl: 8883, ws: 80, wss: 443 };

/** The node URLs of `mqtt.url`, in order. */
export function brokerNodes(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}

/**
 * Why `mqtt.url` cannot be used, naming the node (`node 2 of 3 ("nats://b:4222") ...`), or undefined when
 * every node is a broker URL MQTT.js can dial: a scheme it speaks, a host, and a port if one is given.
 */
export function brokerNodesProblem(url: string): string | undefined {
  const parts = url.split(',').map((u) => u.trim());
  for (const [i, node] of parts.entries()) {
    const which = parts.length > 1 ? `node ${i + 1} of ${parts.length} (${JSON.stringify(node.slice(0, 100))})` : JSON.stringify(node.slice(0, 100));
    if (!node) return `node ${i + 1} of ${parts.length} is empty (two commas, or a comma at an end)`;
    let parsed: URL;
    try {
      parsed = new URL(node);
    } catch {
      return `${which} is not a URL`;
    }
    const protocol = parsed.protocol.replace(/:$/, '');
    if (!(protocol in DEFAULT_PORTS)) return `${which} must begin mqtt://, mqtts://, ws:// or wss://`;
    if (!parsed.hostname) return `${which} has no host`;
    // A port WHATWG URL refuses throws above; an explicit :0 is no broker either.
    if (parsed.port === '0') return `${which} has port 0`;
  }
  return undefined;
}

/**
 * What MQTT.js is given for `mqtt.url`: the first node's URL (its credentials and path apply to every
 * node) and, for several nodes, the `servers` list it goes round on reconnect.
 */
export function connectTarget(url: string): { url: string; servers?: IClientOptions['servers'] } {
  const nodes = brokerNodes(url);
  if (nodes.length <= 1) return { url: nodes[0] ?? url };
  const servers = nodes.map((node) => {
    const parsed = new URL(node);
    const protocol = parsed.protocol.replace(/:$/, '');
    return {
      host: parsed.hostname.replace(/^\[|\]$/g, ''),
      port: parsed.port ? Number(parsed.port) : (DEFAULT_PORTS[protocol] ?? 1883),
      protocol: protocol as NonNullable<IClientOptions['servers']>[number]['protocol'],
    };
  });
  return { url: nodes[0]!, servers };
}
