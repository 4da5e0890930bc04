// Zigbee2MQTT exposes that carry no `category` but are a device's settings (or its diagnostics) in practice: a
// bulb's effect and start-up colour temperature, a plug's power-on behaviour, a radiator's child lock. Left
// uncategorised they would be everyday tools and dashboard cards beside the lights (issue 41). A source's own
// category always wins; this table only fills the gap, by the expose's name (its property without an endpoint:
// `operation_mode` for `operation_mode_left`), and an owner can still expose any of them.
//
// Where it comes from: the keys Zigbee2MQTT's own Home Assistant extension (lib/extension/homeassistant.ts, its
// BINARY_, NUMERIC_ and ENUM_DISCOVERY_LOOKUP tables) gives `entity_category: config` or `diagnostic`, checked
// against the zigbee-herdsman-converters definitions of the fixture home (test/fixtures/homes/), plus the few
// that extension leaves to Home Assistant's "disabled by default" rather than a category (`effect`) or names
// another way (`selftest`, `mirror_display`, the lights' start-up levels).
import type { EntityCategory } from '../../model.js';

const CONFIG = [
  // Lights: what a bulb does at power-on and its effects (a show, not a level people ask for).
  'effect',
  'effect_speed',
  'effect_color',
  'color_temp_startup',
  'current_level_startup',
  'execute_if_off',
  'power_on_behavior',
  'color_power_on_behavior',
  'power_outage_memory',
  'power_supply_mode',
  'power_type',
  'minimum_on_level',
  'ballast_minimum_level',
  'ballast_maximum_level',
  'transition',
  // Finding the device, and its own lights and sounds.
  'identify',
  'selftest',
  'led_indication',
  'led_indicator',
  'led_enable',
  'led_disabled_night',
  'indicator_mode',
  'flip_indicator_light',
  'backlight_mode',
  'backlight_auto_dim',
  'sound_volume',
  'volume',
  'melody',
  // Locks on the device's own buttons.
  'child_lock',
  'button_lock',
  'keypad_lockout',
  // How it is wired and how it reacts.
  'operation_mode',
  'device_mode',
  'switch_type',
  'control_mode',
  'mode_phase_control',
  'load_detection_mode',
  'load_type',
  'load_dimmable',
  'invert_cover',
  'motor_reversal',
  // A cover motor's direction (Aqara's roller shade, Tuya's curtain motors): set once when it is fitted.
  'reverse_direction',
  'auto_relock_time',
  // Sensing: calibration, sensitivity, timeouts and reporting.
  'calibration',
  'calibration_time',
  'local_temperature_calibration',
  'temperature_calibration',
  'humidity_calibration',
  'illuminance_calibration',
  'sensitivity',
  'motion_sensitivity',
  'occupancy_sensitivity',
  'occupancy_timeout',
  'presence_timeout',
  'vibration_timeout',
  'reporting_time',
  'measurement_poll_interval',
  'precision',
  'alarm_humidity',
  'alarm_temperature',
  'alarm_humidity_max',
  'alarm_humidity_min',
  'alarm_temperature_max',
  'alarm_temperature_min',
  // A thermostat's limits and display.
  'max_temperature',
  'min_temperature',
  'max_temperature_limit',
  'min_temperature_limit',
  'comfort_temperature',
  'eco_temperature',
  'away_preset_temperature',
  'away_preset_days',
  'boost_time',
  'temperature_display_mode',
  'temperature_sensor_select',
  'thermostat_unit',
  'temperature_scale',
  'mirror_display',
] as const;

const DIAGNOSTIC = ['test', 'linkquality', 'requested_brightness_level', 'requested_brightness_percent'] as const;

const CATEGORY_BY_NAME: ReadonlyMap<string, EntityCategory> = new Map<string, EntityCategory>([
  ...CONFIG.map((n) => [n, 'config'] as [string, EntityCategory]),
  ...DIAGNOSTIC.map((n) => [n, 'diagnostic'] as [string, EntityCategory]),
]);

/** The category an uncategorised expose has in practice, by its name (`operation_mode`), or undefined. */
export function practicalCategory(name: string | undefined): EntityCategory | undefined {
  return name ? CATEGORY_BY_NAME.get(name) : undefined;
}
