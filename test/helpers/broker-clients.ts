// Outside clients of a broker, as a device or an attacker connects: what the broker let them do.
import mqtt, { type MqttClient } from 'mqtt';

/** Connects (MQTT 3.1.1, no reconnect) and resolves with the client, or with the CONNACK's refusal. */
export async function tryConnect(url: string, options: mqtt.IClientOptions = {}): Promise<{ client?: MqttClient; refused?: string }> {
  try {
    const client = await mqtt.connectAsync(url, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 10_000, ...options });
    return { client };
  } catch (err) {
    return { refused: (err as Error).message };
  }
}

/** Publishes at QoS 1 and says whether the broker kept the connection (the embedded broker closes it on a refused publish). */
export async function publishKept(client: MqttClient, topic: string, payload: string, options: { retain?: boolean } = {}): Promise<boolean> {
  const closed = new Promise<'closed'>((ok) => client.once('close', () => ok('closed')));
  const acked = client.publishAsync(topic, payload, { qos: 1, retain: options.retain ?? false }).then(
    () => 'acked' as const,
    () => 'closed' as const,
  );
  return (await Promise.race([acked, closed])) === 'acked';
}

/** The QoS a broker granted a filter: 128 when it refused it (mqtt.js rejects such a SUBACK, carrying the packet). */
export async function grantedQos(client: MqttClient, filter: string): Promise<number | undefined> {
  return client.subscribeAsync(filter, { qos: 0 }).then(
    (g) => g[0]?.qos,
    (err: { packet?: { granted?: number[] } }) => err.packet?.granted?.[0],
  );
}
