// What the sentence data means to Hearth: the intents it can carry out, the
// kinds of device a `{kind}` list value names (by id: the words live in the
// language's data), and which entity kinds each intent acts on. No words of any
// language here: phrasings and word lists are in sentences/<language>/*.yaml.

import type { EntityKind } from '../../../devices/model.js';

export const INTENT_IDS = [
  'HassTurnOn',
  'HassTurnOff',
  'HassToggle',
  'HassLightSet',
  'HassLightStep',
  'HassLightSetColor',
  'HassSetLevel',
  'HassClimateSetTemperature',
  'HassClimateStep',
  'HassClimateSetMode',
  'HassFanSetSpeed',
  'HassFanSetPreset',
  'HassOpenCover',
  'HassCloseCover',
  'HassStopCover',
  'HassSetPosition',
  'HassLock',
  'HassUnlock',
  'HassPress',
  'HassGetState',
  'HassGetArea',
  'HassGetAll',
  'HassCameraImage',
  'HassGetHistory',
  // "Who unlocked the front door today?", "why can't I unlock the front door?": the audit and the policy (issue 42).
  'HearthAudit',
  'HearthPolicy',
  // "and the hallway too": the session's last sentence again, on what is said now.
  'HearthRepeat',
  // "What's the weather like?", "good night" in a home without scenes: said to be beyond Hearth, never guessed at.
  'HearthOutOfScope',
  'UnknownDevice',
  // Kinds of #31: sentence data in sentences/<language>/<kind>.yaml.
  'HassVacuumReturnToBase',
  'HassLawnMowerDock',
  'HassHumidifierSetpoint',
] as const;
export type IntentId = (typeof INTENT_IDS)[number];

/** Intents that only read: a question is answered by these alone. */
export const READ_INTENTS: ReadonlySet<IntentId> = new Set([
  'HassGetState',
  'HassGetArea',
  'HassGetAll',
  'HassCameraImage',
  'HassGetHistory',
  'HearthAudit',
  'HearthPolicy',
  'HearthOutOfScope',
  'UnknownDevice',
]);

/** A kind of device or a measurement a `{kind}` value names. */
export interface KindClass {
  id: string;
  /** Does this entity count as one, for an intent of this purpose? */
  match(e: ClassEntity, purpose: 'command' | 'read'): boolean;
  /** When nothing matches, for a read: e.g. temperature -> a thermostat's reading. */
  fallback?: (e: ClassEntity) => boolean;
}

/** What a class predicate sees of an entity. */
export interface ClassEntity {
  kind: EntityKind;
  deviceClass?: string;
  /** Normalised words of the name and aliases. */
  words: Set<string>;
  /** The class ids the entity's own words name ("Desk lamp" -> light), from the `kind` list. */
  named: Set<string>;
}

const dc = (e: ClassEntity, ...classes: string[]) => !!e.deviceClass && classes.includes(e.deviceClass);
const named = (e: ClassEntity, ...ids: string[]) => ids.some((id) => e.named.has(id));

const OPENING = ['door', 'window', 'garage_door', 'opening'];

/** Kind classes by id. A `{kind}` list value whose id is not here names a device class ("smoke"). */
export const KIND_CLASSES: KindClass[] = [
  { id: 'light', match: (e) => e.kind === 'light' || (e.kind === 'switch' && named(e, 'light')) },
  { id: 'switch', match: (e) => e.kind === 'switch' },
  { id: 'fan', match: (e) => e.kind === 'fan' || (e.kind === 'switch' && named(e, 'fan')) },
  { id: 'valve', match: (e) => e.kind === 'valve' || (e.kind === 'switch' && named(e, 'valve')) },
  { id: 'cover', match: (e) => e.kind === 'cover' && !dc(e, 'garage', 'door', 'gate', 'window') },
  { id: 'blind', match: (e) => e.kind === 'cover' && (dc(e, 'blind', 'shade', 'shutter', 'awning') || named(e, 'blind')) },
  { id: 'curtain', match: (e) => e.kind === 'cover' && (dc(e, 'curtain') || named(e, 'curtain')) },
  { id: 'shade', match: (e) => e.kind === 'cover' && (dc(e, 'shade') || named(e, 'shade')) },
  { id: 'shutter', match: (e) => e.kind === 'cover' && (dc(e, 'shutter') || named(e, 'shutter')) },
  { id: 'awning', match: (e) => e.kind === 'cover' && (dc(e, 'awning') || named(e, 'awning')) },
  {
    id: 'door',
    match: (e, purpose) =>
      // A gate is not a door: "close all the doors" leaves the driveway gate alone (a garage door is one).
      (e.kind === 'cover' && (dc(e, 'door', 'garage') || named(e, 'door'))) ||
      e.kind === 'lock' ||
      (purpose === 'read' && e.kind === 'binary_sensor' && dc(e, 'door', 'garage_door', 'opening')),
  },
  { id: 'garage', match: (e) => (e.kind === 'cover' && (dc(e, 'garage') || named(e, 'garage'))) || (e.kind === 'binary_sensor' && dc(e, 'garage_door')) },
  { id: 'window', match: (e) => (e.kind === 'cover' && (dc(e, 'window') || named(e, 'window'))) || (e.kind === 'binary_sensor' && dc(e, 'window')) },
  {
    id: 'gate',
    match: (e, purpose) =>
      ((e.kind === 'cover' || e.kind === 'lock') && (dc(e, 'gate') || named(e, 'gate'))) ||
      // "is the garden gate shut": the contact sensor on a gate (`Garden/Gate`, whose reading is "Gate Contact").
      (purpose === 'read' && e.kind === 'binary_sensor' && dc(e, ...OPENING) && named(e, 'gate')),
  },
  { id: 'lock', match: (e) => e.kind === 'lock' },
  // A switch its owner called a heater is one, to switch on and off.
  { id: 'climate', match: (e) => e.kind === 'climate' || (e.kind === 'switch' && named(e, 'climate')) },
  // A doorbell is a camera word; an event source named one ("Doorbell") is meant too: its history says when it rang.
  { id: 'camera', match: (e) => e.kind === 'camera' || e.kind === 'image' || (e.kind === 'event' && named(e, 'camera')) },
  {
    id: 'temperature',
    match: (e, purpose) => (purpose === 'command' ? e.kind === 'climate' : e.kind === 'sensor' && dc(e, 'temperature')),
    fallback: (e) => e.kind === 'climate',
  },
  { id: 'humidity', match: (e) => e.kind === 'sensor' && dc(e, 'humidity') },
  // An air quality index, or a sensor named for the air's quality that measures nothing else (Zigbee2MQTT's
  // `air_quality` has no device class; the same device's humidity does).
  { id: 'air_quality', match: (e) => e.kind === 'sensor' && (dc(e, 'aqi') || (named(e, 'air_quality') && !e.deviceClass)) },
  { id: 'motion', match: (e) => e.kind === 'binary_sensor' && dc(e, 'motion', 'occupancy', 'presence') },
  { id: 'opening', match: (e) => e.kind === 'binary_sensor' && dc(e, ...OPENING) },
  { id: 'battery', match: (e) => e.kind === 'sensor' && dc(e, 'battery') },
  // "the air pressure": a climate sensor's pressure, whichever class its source gave it (Zigbee2MQTT's is `pressure`).
  { id: 'atmospheric_pressure', match: (e) => e.kind === 'sensor' && dc(e, 'atmospheric_pressure', 'pressure') },
  { id: 'power', match: (e) => e.kind === 'sensor' && dc(e, 'power') },
  { id: 'energy', match: (e) => e.kind === 'sensor' && dc(e, 'energy') },
  { id: 'sensor', match: (e) => e.kind === 'sensor' || e.kind === 'binary_sensor' },
  { id: 'button', match: (e) => e.kind === 'button' },
  { id: 'scene', match: (e) => e.kind === 'scene' },
  { id: 'vacuum', match: (e) => e.kind === 'vacuum' },
  { id: 'lawn_mower', match: (e) => e.kind === 'lawn_mower' },
  // A siren whose source offers its alarm as a switch (Zigbee2MQTT's `alarm` of a Tuya siren: "Siren Alarm") is one.
  { id: 'siren', match: (e) => e.kind === 'siren' || (e.kind === 'switch' && named(e, 'siren')) },
  { id: 'humidifier', match: (e) => e.kind === 'humidifier' },
  { id: 'water_heater', match: (e) => e.kind === 'water_heater' },
  { id: 'tracker', match: (e) => e.kind === 'device_tracker' },
  { id: 'update', match: (e) => e.kind === 'update' },
  { id: 'everything', match: () => true },
];

export const KIND_BY_ID = new Map(KIND_CLASSES.map((c) => [c.id, c]));

/** A `{kind}` value Hearth has no class for names a device class ("smoke", "moisture"). */
export function kindClass(id: string): KindClass {
  const known = KIND_BY_ID.get(id);
  if (known) return known;
  return { id, match: (x) => (x.kind === 'sensor' || x.kind === 'binary_sensor' || x.kind === 'cover') && x.deviceClass === id };
}

/** Which kinds each intent acts on. */
export const INTENT_KINDS: Partial<Record<IntentId, EntityKind[]>> = {
  HassTurnOn: ['switch', 'light', 'climate', 'fan', 'valve', 'scene', 'vacuum', 'lawn_mower', 'siren', 'humidifier', 'water_heater'],
  HassTurnOff: ['switch', 'light', 'climate', 'fan', 'valve', 'vacuum', 'lawn_mower', 'siren', 'humidifier', 'water_heater'],
  HassToggle: ['switch', 'light', 'fan'],
  HassLightSet: ['light'],
  HassLightStep: ['light', 'fan'],
  HassLightSetColor: ['light'],
  HassSetLevel: ['light', 'climate', 'cover', 'valve', 'number', 'fan'],
  HassClimateSetTemperature: ['climate', 'water_heater'],
  HassClimateStep: ['climate'],
  HassClimateSetMode: ['climate'],
  HassFanSetSpeed: ['fan'],
  HassFanSetPreset: ['fan'],
  HassOpenCover: ['cover', 'valve'],
  HassCloseCover: ['cover', 'valve'],
  HassStopCover: ['cover', 'valve', 'vacuum', 'lawn_mower'],
  HassSetPosition: ['cover', 'valve'],
  HassLock: ['lock'],
  HassUnlock: ['lock'],
  HassPress: ['button'],
  HassCameraImage: ['camera'],
  HassVacuumReturnToBase: ['vacuum'],
  HassLawnMowerDock: ['lawn_mower'],
  HassHumidifierSetpoint: ['humidifier'],
};
