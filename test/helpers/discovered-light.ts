// A light that announces itself the Home Assistant way, for tests on any broker: its config, availability and
// state retained, again whenever Home Assistant (or Hearth) says `online` on homeassistant/status, and
// `offline` by last will when its connection dies. It echoes every ON/OFF command as its new state.
import mqtt, { type MqttClient } from 'mqtt';

export interface DiscoveredLight {
  client: MqttClient;
  commandTopic: string;
  /** The commands it received, in order. */
  commands: string[];
}

/** The porch light (topics under `cluster/porch/`) on the broker at `url`. */
export async function porchLight(url: string): Promise<DiscoveredLight> {
  const config = {
    name: 'Porch light',
    unique_id: 'cluster_porch_light',
    command_topic: 'cluster/porch/set',
    state_topic: 'cluster/porch/state',
    availability_topic: 'cluster/porch/availability',
    payload_on: 'ON',
    payload_off: 'OFF',
    device: { identifiers: ['cluster_porch'], name: 'Porch' },
  };
  const client = await mqtt.connectAsync(url, {
    protocolVersion: 4,
    reconnectPeriod: 0,
    will: { topic: config.availability_topic, payload: Buffer.from('offline'), qos: 1, retain: true },
  });
  const commands: string[] = [];
  let state = 'OFF';
  const announce = async () => {
    await client.publishAsync('homeassistant/light/cluster_porch/config', JSON.stringify(config), { qos: 1, retain: true });
    await client.publishAsync(config.availability_topic, 'online', { qos: 1, retain: true });
    await client.publishAsync(config.state_topic, state, { qos: 1, retain: true });
  };
  // A test may cut its connection (its last will) while it answers: that answer is lost, not an error.
  const lost = () => undefined;
  client.on('message', (topic, payload) => {
    const text = payload.toString();
    if (topic === 'homeassistant/status' && text === 'online') announce().catch(lost);
    if (topic === config.command_topic && (text === 'ON' || text === 'OFF')) {
      commands.push(text);
      state = text;
      client.publishAsync(config.state_topic, state, { qos: 1, retain: true }).catch(lost);
    }
  });
  await client.subscribeAsync([config.command_topic, 'homeassistant/status'], { qos: 1 });
  await announce();
  return { client, commandTopic: config.command_topic, commands };
}
