// The shapes Zigbee2MQTT publishes on <prefix>/bridge/devices: one entry per
// device, with the converter definition and its `exposes` (zigbee-herdsman-
// converters' Expose objects, serialised). Only the fields Hearth reads.

/** Access bits of an expose feature. */
export const ACCESS = {
  /** The property is published in the device's state message. */
  STATE: 1,
  /** It can be set with <device>/set. */
  SET: 2,
  /** It can be read on demand with <device>/get. */
  GET: 4,
} as const;

export interface Z2mExpose {
  type: string;
  name?: string;
  label?: string;
  property?: string;
  access?: number;
  endpoint?: string;
  description?: string;
  category?: string;
  unit?: string;
  features?: Z2mExpose[];
  /** binary */
  value_on?: unknown;
  value_off?: unknown;
  value_toggle?: unknown;
  /** numeric */
  value_min?: number;
  value_max?: number;
  value_step?: number;
  presets?: unknown[];
  /** enum */
  values?: unknown[];
  /** list */
  item_type?: Z2mExpose;
  length_min?: number;
  length_max?: number;
}

export interface Z2mDefinition {
  model?: string;
  vendor?: string;
  description?: string;
  exposes?: Z2mExpose[];
  options?: unknown[];
  supports_ota?: boolean;
  source?: string;
}

export interface Z2mDevice {
  ieee_address?: string;
  friendly_name?: string;
  type?: string;
  network_address?: number;
  supported?: boolean;
  disabled?: boolean;
  description?: string | null;
  definition?: Z2mDefinition | null;
  power_source?: string;
  model_id?: string;
  manufacturer?: string;
  interview_completed?: boolean;
  interviewing?: boolean;
  /**
   * Every endpoint of the device, by id: the scenes stored on it (recalled with {"scene_recall": id}), and (2.x) the
   * name the definition gives it (`left`, `right`; none for the default one).
   */
  endpoints?: Record<string, { name?: unknown; scenes?: Array<{ id?: unknown; name?: unknown }> }>;
}
