// JSON Schema of a device file (devices/*.yaml). Compiled once by the loader.
import { ENTITY_KINDS } from './model.js';

// Topics are exact names: a wildcard in a state topic would mix devices, in a command topic it is refused by brokers.
const topic = { type: 'string', minLength: 1, maxLength: 512, pattern: '^[^#+\\u0000]+$' };
const commandTopic = topic;
const jsonPath = { type: 'string', minLength: 1, maxLength: 256 };
const key = { type: 'string', pattern: '^[a-z0-9][a-z0-9_]{0,63}$' };

const range = {
  type: 'object',
  additionalProperties: false,
  required: ['min', 'max'],
  properties: { min: { type: 'number' }, max: { type: 'number' }, step: { type: 'number', exclusiveMinimum: 0 } },
};

const availabilitySource = {
  type: 'object',
  additionalProperties: false,
  required: ['topic'],
  properties: {
    topic,
    path: jsonPath,
    payload_available: { type: 'string', default: 'online' },
    payload_not_available: { type: 'string', default: 'offline' },
  },
};

const availability = {
  oneOf: [
    topic,
    availabilitySource,
    {
      type: 'object',
      additionalProperties: false,
      required: ['sources'],
      properties: {
        sources: { type: 'array', minItems: 1, items: { oneOf: [topic, availabilitySource] } },
        mode: { enum: ['all', 'any', 'latest'] },
      },
    },
  ],
};

const stringMap = { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } };

const entity = {
  type: 'object',
  additionalProperties: false,
  required: ['kind'],
  properties: {
    kind: { enum: [...ENTITY_KINDS] },
    name: { type: 'string', minLength: 1, maxLength: 200 },
    aliases: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 } },
    area: { type: 'string', minLength: 1, maxLength: 100 },
    floor: { type: 'string', minLength: 1, maxLength: 100, description: 'The floor the area is on ("Upstairs"): "upstairs lights off".' },
    device_class: { type: 'string', maxLength: 64 },
    unit: { type: 'string', maxLength: 32 },
    icon: { type: 'string', maxLength: 64 },
    state_topic: topic,
    value_path: jsonPath,
    attributes: {
      type: 'object',
      propertyNames: key,
      additionalProperties: {
        oneOf: [
          jsonPath,
          {
            type: 'object',
            additionalProperties: false,
            properties: { topic, path: jsonPath },
          },
        ],
      },
    },
    command_topic: commandTopic,
    command_format: { enum: ['plain', 'json'] },
    command_topics: { type: 'object', propertyNames: key, additionalProperties: commandTopic },
    payloads: stringMap,
    states: stringMap,
    min: { type: 'number' },
    max: { type: 'number' },
    step: { type: 'number', exclusiveMinimum: 0 },
    ranges: { type: 'object', propertyNames: key, additionalProperties: range },
    options: {
      oneOf: [
        { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        {
          type: 'object',
          propertyNames: key,
          additionalProperties: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        },
      ],
    },
    color_modes: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['xy', 'hs', 'rgb'] } },
    color_temp: {
      type: 'object',
      additionalProperties: false,
      required: ['min_kelvin', 'max_kelvin'],
      properties: {
        min_kelvin: { type: 'integer', minimum: 1000, maximum: 20000 },
        max_kelvin: { type: 'integer', minimum: 1000, maximum: 20000 },
        unit: { enum: ['kelvin', 'mired'] },
      },
    },
    image_encoding: { enum: ['raw', 'b64'] },
    confirm_timeout_ms: { type: 'integer', minimum: 100, maximum: 600000 },
    availability,
    simulate: { type: 'object' },
  },
  allOf: [
    {
      if: { properties: { kind: { enum: ['sensor', 'binary_sensor', 'camera', 'image', 'device_tracker', 'event'] } } },
      then: { required: ['state_topic'] },
    },
    {
      if: {
        properties: {
          kind: {
            enum: [
              'switch',
              'light',
              'cover',
              'lock',
              'number',
              'select',
              'button',
              'fan',
              'valve',
              'alarm_control_panel',
              'scene',
              'vacuum',
              'siren',
              'humidifier',
              'text',
              'notify',
            ],
          },
        },
      },
      then: { required: ['command_topic'] },
    },
    {
      // An update is read (installed and latest version); installing it needs a command topic.
      if: { properties: { kind: { const: 'update' } } },
      then: { anyOf: [{ required: ['command_topic'] }, { required: ['state_topic'] }] },
    },
    {
      if: { properties: { kind: { enum: ['climate', 'lawn_mower', 'water_heater'] } } },
      then: { anyOf: [{ required: ['command_topic'] }, { required: ['command_topics'] }] },
    },
    {
      if: { properties: { kind: { const: 'select' } } },
      then: { required: ['options'] },
    },
  ],
};

export const deviceFileSchema = {
  $id: 'hearth-device-file',
  type: 'object',
  additionalProperties: false,
  required: ['devices'],
  properties: {
    devices: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'entities'],
        properties: {
          id: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
          name: { type: 'string', minLength: 1, maxLength: 200 },
          area: { type: 'string', minLength: 1, maxLength: 100 },
          floor: { type: 'string', minLength: 1, maxLength: 100 },
          manufacturer: { type: 'string', maxLength: 100 },
          model: { type: 'string', maxLength: 100 },
          availability,
          entities: {
            type: 'object',
            minProperties: 1,
            propertyNames: key,
            additionalProperties: entity,
          },
        },
      },
    },
  },
} as const;
