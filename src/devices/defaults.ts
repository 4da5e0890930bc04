// What a device says when its file does not say otherwise. The vocabulary
// follows Home Assistant's MQTT defaults, so most real devices need no mapping.
import type { EntityKind, Range } from './model.js';

export const DEFAULT_PAYLOADS: Partial<Record<EntityKind, Record<string, string>>> = {
  switch: { on: 'ON', off: 'OFF' },
  light: { on: 'ON', off: 'OFF' },
  cover: { open: 'OPEN', close: 'CLOSE', stop: 'STOP' },
  lock: { lock: 'LOCK', unlock: 'UNLOCK' },
  button: { press: 'PRESS' },
  fan: { on: 'ON', off: 'OFF' },
  valve: { open: 'OPEN', close: 'CLOSE', stop: 'STOP' },
  alarm_control_panel: { arm_home: 'ARM_HOME', arm_away: 'ARM_AWAY', arm_night: 'ARM_NIGHT', disarm: 'DISARM' },
  // Home Assistant's MQTT defaults for each platform.
  scene: { activate: 'ON' },
  vacuum: {
    start: 'start',
    pause: 'pause',
    stop: 'stop',
    return_to_base: 'return_to_base',
    locate: 'locate',
    clean_spot: 'clean_spot',
  },
  lawn_mower: { start_mowing: 'start_mowing', pause: 'pause', dock: 'dock' },
  siren: { on: 'ON', off: 'OFF' },
  update: { install: 'install' },
  humidifier: { on: 'ON', off: 'OFF' },
  water_heater: { on: 'ON', off: 'OFF' },
};

export const DEFAULT_STATES: Partial<Record<EntityKind, Record<string, string>>> = {
  binary_sensor: { on: 'ON', off: 'OFF' },
  switch: { on: 'ON', off: 'OFF' },
  light: { on: 'ON', off: 'OFF' },
  cover: { open: 'open', closed: 'closed', opening: 'opening', closing: 'closing', stopped: 'stopped' },
  lock: { locked: 'LOCKED', unlocked: 'UNLOCKED', locking: 'LOCKING', unlocking: 'UNLOCKING', jammed: 'JAMMED' },
  fan: { on: 'ON', off: 'OFF' },
  valve: { open: 'open', closed: 'closed', opening: 'opening', closing: 'closing', stopped: 'stopped' },
  alarm_control_panel: {
    disarmed: 'disarmed',
    armed_home: 'armed_home',
    armed_away: 'armed_away',
    armed_night: 'armed_night',
    armed_vacation: 'armed_vacation',
    armed_custom_bypass: 'armed_custom_bypass',
    arming: 'arming',
    disarming: 'disarming',
    pending: 'pending',
    triggered: 'triggered',
  },
  vacuum: { cleaning: 'cleaning', docked: 'docked', paused: 'paused', idle: 'idle', returning: 'returning', error: 'error' },
  lawn_mower: { mowing: 'mowing', docked: 'docked', paused: 'paused', returning: 'returning', error: 'error' },
  siren: { on: 'ON', off: 'OFF' },
  humidifier: { on: 'ON', off: 'OFF' },
  device_tracker: { home: 'home', not_home: 'not_home' },
};

export const DEFAULT_RANGES: Partial<Record<EntityKind, Record<string, Range>>> = {
  cover: { position: { min: 0, max: 100, step: 1 } },
  climate: { temperature: { min: 7, max: 35, step: 0.5 } },
  number: { value: { min: 0, max: 100, step: 1 } },
  valve: { position: { min: 0, max: 100, step: 1 } },
  humidifier: { humidity: { min: 0, max: 100, step: 1 } },
  // HA's water heater: 110-140 °F, i.e. about 43-60 °C.
  water_heater: { temperature: { min: 43, max: 60, step: 0.5 } },
  text: { length: { min: 0, max: 255, step: 1 } },
};

/** Longest message a notify entity is sent (Home Assistant sets none; a display or speaker needs no more). */
export const MAX_MESSAGE_CHARS = 1000;
/** Longest text a text entity takes: Home Assistant's own bound (max 255). */
export const MAX_TEXT_CHARS = 255;

/** How long to wait for a device to confirm a command, by kind (a garage door is slow). */
export const DEFAULT_CONFIRM_TIMEOUT_MS: Record<EntityKind, number> = {
  sensor: 2000,
  binary_sensor: 2000,
  camera: 2000,
  switch: 3000,
  light: 3000,
  cover: 30000,
  lock: 10000,
  climate: 5000,
  number: 3000,
  select: 3000,
  button: 2000,
  fan: 3000,
  valve: 30000,
  alarm_control_panel: 10000,
  scene: 2000,
  vacuum: 15000,
  lawn_mower: 30000,
  siren: 5000,
  device_tracker: 2000,
  event: 2000,
  // Installing firmware takes minutes: the call is confirmed once the device says it is installing.
  update: 60000,
  humidifier: 5000,
  water_heater: 10000,
  text: 3000,
  notify: 2000,
  image: 2000,
};
