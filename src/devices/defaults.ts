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
};

export const DEFAULT_RANGES: Partial<Record<EntityKind, Record<string, Range>>> = {
  cover: { position: { min: 0, max: 100, step: 1 } },
  climate: { temperature: { min: 7, max: 35, step: 0.5 } },
  number: { value: { min: 0, max: 100, step: 1 } },
  valve: { position: { min: 0, max: 100, step: 1 } },
};

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
};
