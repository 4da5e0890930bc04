// The fixture Zigbee2MQTT home (test/fixtures/homes/zigbee2mqtt-home.json) as the tests that walk it name its
// devices: their ids (from the whole friendly name each device had when Hearth first saw it, as Hearth makes
// them), and a device as the home API answers it.
export const Z2M_HOME = {
  /** `Living room/Ceiling light`. */
  CEILING: 'living_room_ceiling_light',
  /** `Kitchen spots`: an area word only suggested. */
  SPOTS: 'kitchen_spots',
  /** An untouched `0x00158d0004a1b2c3` contact sensor: its friendly name is its IEEE address, and so is its id. */
  CONTACT: '0x00158d0004a1b2c3',
  MOTION: 'hallway_motion_sensor',
  /** A remote: nothing but settings and diagnostics. */
  REMOTE: 'living_room_remote',
  RADIATOR: 'bedroom_radiator',
  BEDSIDE: 'bedroom_bedside_lamp',
  DESK_PLUG: 'office_desk_plug',
  LOCK: 'entrance_front_door_lock',
  COFFEE: 'kitchen_coffee_machine',
  WALL_SWITCH: 'hallway_wall_switch',
  SMOKE: 'kitchen_smoke_detector',
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
