// The fixture Zigbee2MQTT home (test/fixtures/homes/zigbee2mqtt-home.json) as the tests that walk it name its
// devices: their ids (from the IEEE address, as Hearth makes them), and a device as the home API answers it.
export const Z2M_HOME = {
  /** `Living room/Ceiling light`. */
  CEILING: 'zigbee2mqtt_0x000d6ffffe1a2b3c',
  /** `Kitchen spots`: an area word only suggested. */
  SPOTS: 'zigbee2mqtt_0x0017880104a1b2c2',
  /** An untouched `0x00158d0004a1b2c3` contact sensor. */
  CONTACT: 'zigbee2mqtt_0x00158d0004a1b2c3',
  MOTION: 'zigbee2mqtt_0x00158d00054c3b2a',
  /** A remote: nothing but settings and diagnostics. */
  REMOTE: 'zigbee2mqtt_0x000d6ffffe3e4f5a',
} as const;

/** A device as `GET /api/home/devices` and `hearth devices --json` give it. */
export interface HomeDeviceJson {
  id: string;
  name: string;
  area: string | null;
  areaFrom: string | null;
  suggestedArea: string | null;
  aliases: string[];
  entities: Array<{ id: string; name: string; exposed: boolean; category: string | null; area: string | null }>;
}
