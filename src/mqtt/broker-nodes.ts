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
