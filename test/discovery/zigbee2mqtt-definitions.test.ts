// Every device definition zigbee-herdsman-converters ships, as Zigbee2MQTT
// would list it in bridge/devices, through the Zigbee2MQTT conversion: each one
// yields entities that load as a device file would and tools with valid names
// and compiling schemas, or a specific, logged reason it was skipped.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { ValidateFunction } from 'ajv';
import { DeviceIds } from '../../src/devices/device-ids.js';
import { SOURCE_PRIORITY } from '../../src/devices/discovery/adapter.js';
import { Zigbee2mqttAdapter } from '../../src/devices/discovery/zigbee2mqtt/adapter.js';
import { convertDevice, type ConvertedDevice } from '../../src/devices/discovery/zigbee2mqtt/device.js';
import type { Z2mDevice } from '../../src/devices/discovery/zigbee2mqtt/types.js';
import { deviceFileSchema } from '../../src/devices/file-schema.js';
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Device, Entity } from '../../src/devices/model.js';
import { DeviceRegistry } from '../../src/devices/registry.js';
import type { MqttConnection } from '../../src/mqtt/connection.js';
import { generateTools, type Invoke } from '../../src/tools/generator.js';
import { isValidToolName } from '../../src/tools/names.js';
import { createAjv } from '../../src/util/ajv.js';
import { LINE_BUDGET } from '../../src/util/line-budget.js';
import { waitFor } from '../helpers/wait.js';
import { logSink } from '../helpers/log-sink.js';

const FIXED_TOOLS = new Set(['get_state', 'get_history', 'get_audit', 'explain_policy', 'find_entities', 'get_camera_image']);
// Device ids as the adapter gives them: from the friendly name, numbered when two devices are named alike.
const OPTIONS = { prefix: 'zigbee2mqtt', deviceAvailability: true, deviceId: new DeviceIds(undefined).lookup('zigbee2mqtt') };
const noInvoke: Invoke = async () => ({ text: '' });

interface Loaded {
  entries: Z2mDevice[];
  definitions: number;
  functionExposes: number;
}

/** Every definition as a bridge/devices entry, exposes serialised the way Zigbee2MQTT publishes them. */
async function loadDefinitions(): Promise<Loaded> {
  const zhc = (await import('zigbee-herdsman-converters')) as unknown as { prepareDefinition(d: unknown): any };
  const mod = (await import('zigbee-herdsman-converters/devices/index' as string)) as { default: unknown };
  // Node gives the CommonJS module's exports as default; tsx may unwrap one level more.
  const defs = (Array.isArray(mod.default) ? mod.default : (mod.default as { default: unknown[] }).default) as unknown[];
  let functionExposes = 0;
  const entries = defs.map((raw, i): Z2mDevice => {
    const d = zhc.prepareDefinition(raw);
    let exposes = d.exposes;
    if (typeof exposes === 'function') {
      functionExposes++;
      exposes = exposes({ isDummyDevice: true }, {});
    }
    return {
      ieee_address: `0x${i.toString(16).padStart(16, '0')}`,
      type: 'Router',
      supported: true,
      disabled: false,
      interview_completed: true,
      // Zigbee2MQTT refuses + and # in friendly names (MQTT wildcards).
      friendly_name: `${d.vendor} ${d.model}`.replace(/[+#]/g, '_'),
      power_source: 'Mains (single phase)',
      definition: { model: d.model, vendor: d.vendor, description: d.description, exposes: JSON.parse(JSON.stringify(exposes ?? [])), supports_ota: !!d.ota },
    };
  });
  return { entries, definitions: defs.length, functionExposes };
}

/** A device as the device-file YAML that would declare it. */
function asDeviceFile(device: Device): unknown {
  const availability = (a: Entity['availability']) =>
    a && {
      sources: a.sources.map((s) => ({ topic: s.topic, path: s.path, payload_available: s.payloadAvailable, payload_not_available: s.payloadNotAvailable })),
      mode: a.mode,
    };
  return {
    devices: [
      {
        id: device.id,
        name: device.name,
        manufacturer: device.manufacturer,
        model: device.model,
        availability: availability(device.availability),
        entities: Object.fromEntries(
          device.entities.map((e) => [
            e.key,
            {
              kind: e.kind,
              name: e.name,
              device_class: e.deviceClass,
              unit: e.unit,
              state_topic: e.stateTopic,
              value_path: e.valuePath,
              attributes: e.attributes,
              command_topic: e.commandTopic,
              command_format: e.commandFormat,
              command_topics: e.commandTopics,
              payloads: e.payloads,
              states: e.states,
              ranges: e.ranges,
              options: e.options,
              confirm_timeout_ms: e.confirmTimeoutMs,
              availability: availability(e.availability),
            },
          ]),
        ),
      },
    ],
  };
}

const subset = (mine: Record<string, unknown>, theirs: Record<string, unknown>) =>
  Object.entries(mine).every(([k, v]) => JSON.stringify(theirs[k]) === JSON.stringify(v));

describe('Zigbee2MQTT: every zigbee-herdsman-converters definition', () => {
  it('yields valid entities and tools, or a specific reason', async (t) => {
    const { entries, definitions, functionExposes } = await loadDefinitions();
    assert.ok(definitions > 4000, `expected thousands of definitions, got ${definitions}`);

    const ajv = createAjv({ useDefaults: true, coerceTypes: false });
    const compiled = new Map<string, ValidateFunction>();
    const checked = new Set<string>();
    // Every distinct schema is checked against JSON Schema's meta-schema; one of each shape
    // (the same keywords and structure, whatever the enum words, bounds and descriptions) is compiled.
    const compile = (schema: unknown) => {
      const full = JSON.stringify(schema);
      if (checked.has(full)) return;
      checked.add(full);
      assert.ok(ajv.validateSchema(schema as object), `not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}: ${full.slice(0, 200)}`);
      const shape = JSON.stringify(schema, (k, v) =>
        k === 'description'
          ? undefined
          : k === 'enum' && Array.isArray(v)
            ? `enum of ${v.length}`
            : typeof v === 'number'
              ? Number.isInteger(v)
                ? 1
                : 0.5
              : v,
      );
      if (!compiled.has(shape)) compiled.set(shape, ajv.compile(schema as object));
    };
    // The device-file schema itself for every device; the full loader (YAML and all) for a sample of them.
    const validateFile = createAjv({ useDefaults: true }).compile(deviceFileSchema);
    const sampled = new Set<string>();
    let loadedBack = 0;
    const loadBack = (what: string, device: Device, doc: unknown) => {
      loadedBack++;
      const loaded = parseDeviceFile(`${device.id}.yaml`, JSON.stringify(doc));
      assert.ok(!('problems' in loaded), `${what}: does not load as a device file: ${JSON.stringify('problems' in loaded && loaded.problems.slice(0, 3))}`);
      const back = loaded.devices[0];
      assert.equal(back.entities.length, device.entities.length);
      for (const [i, e] of device.entities.entries()) {
        const b = back.entities[i];
        const where = `${what} ${e.key}`;
        assert.equal(b.id, e.id, where);
        assert.equal(b.kind, e.kind, where);
        assert.equal(b.stateTopic, e.stateTopic, where);
        assert.equal(b.valuePath, e.valuePath, where);
        assert.equal(b.commandTopic, e.commandTopic, where);
        assert.equal(b.commandFormat, e.commandFormat, where);
        assert.deepEqual(b.attributes, e.attributes, where);
        assert.deepEqual(b.options, e.options, where);
        assert.equal(b.confirmTimeoutMs, e.confirmTimeoutMs, where);
        // A file cannot hold the availability transform (it reads both payload forms); the rest must match.
        const words = (a: Entity['availability']) => a && { mode: a.mode, sources: a.sources.map((x) => [x.topic, x.payloadAvailable, x.payloadNotAvailable]) };
        assert.deepEqual(words(b.availability), words(e.availability), where);
        assert.ok(subset(e.ranges, b.ranges) && subset(e.payloads, b.payloads) && subset(e.states, b.states), `${where}: ranges/payloads/states differ`);
      }
    };

    const kinds: Record<string, number> = {};
    const deviceSkips: Record<string, number> = {};
    const featureSkips: Record<string, number> = {};
    const partialSkips: Record<string, number> = {};
    const all: Entity[] = [];
    const converted: ConvertedDevice[] = [];
    let tools = 0;
    for (const entry of entries) {
      const c = convertDevice(entry, OPTIONS);
      converted.push(c);
      for (const s of c.skipped) {
        assert.ok(s.reason && s.detail && s.what, `${entry.friendly_name}: a skip without a reason: ${JSON.stringify(s)}`);
        assert.notEqual(s.reason, 'invalid', `${entry.friendly_name}: the converter made an invalid entity: ${s.what}: ${s.detail}`);
        const bucket = s.partial ? partialSkips : featureSkips;
        bucket[s.reason] = (bucket[s.reason] ?? 0) + 1;
      }
      if (!c.device) {
        const reason = c.skipped.find((s) => !s.partial);
        assert.ok(reason, `${entry.friendly_name}: no device and no reason`);
        deviceSkips[reason.reason] = (deviceSkips[reason.reason] ?? 0) + 1;
        continue;
      }
      const device = c.device;
      // The same invariants a device file is held to: it validates as one and, for a sample, loads as one.
      const doc = asDeviceFile(device);
      assert.ok(
        validateFile(JSON.parse(JSON.stringify(doc))),
        `${entry.friendly_name}: not a valid device file: ${JSON.stringify(validateFile.errors?.slice(0, 3))}`,
      );
      for (const e of device.entities) kinds[e.kind] = (kinds[e.kind] ?? 0) + 1;
      all.push(...device.entities);
      // Every tenth device, and the first with each new mix of kinds, goes through the loader itself.
      const mix = [...new Set(device.entities.map((e) => e.kind))].sort().join(',');
      if (converted.length % 10 === 0 || !sampled.has(mix)) {
        sampled.add(mix);
        loadBack(entry.friendly_name!, device, doc);
      }
      // Its tools on their own (the per-entity shape a small home gets).
      const built = generateTools(device.entities, { shape: 'per-entity', groupAbove: 1_000_000 }, noInvoke);
      const names = new Set<string>();
      for (const tool of built.tools) {
        assert.ok(FIXED_TOOLS.has(tool.name) || isValidToolName(tool.name), `${entry.friendly_name}: invalid tool name ${tool.name}`);
        assert.ok(!names.has(tool.name), `${entry.friendly_name}: duplicate tool name ${tool.name}`);
        names.add(tool.name);
        compile(tool.parameters);
      }
      tools += built.tools.length;
    }
    // All of them in one home, in both shapes: names stay valid and unique at that scale.
    for (const shape of ['per-entity', 'grouped'] as const) {
      const built = generateTools(all, { shape, groupAbove: 40 }, noInvoke);
      const names = built.tools.map((x) => x.name);
      assert.equal(new Set(names).size, names.length, `${shape}: tool names are not unique`);
      for (const tool of built.tools) {
        assert.ok(FIXED_TOOLS.has(tool.name) || isValidToolName(tool.name), `${shape}: invalid tool name ${tool.name}`);
        compile(tool.parameters);
      }
      t.diagnostic(`${shape}: ${built.tools.length} tools for ${all.length} entities`);
    }

    const devices = converted.filter((c) => c.device).length;
    const summary = {
      definitions,
      functionExposes,
      devicesWithTools: devices,
      devicesSkipped: definitions - devices,
      loadedThroughTheDeviceFileLoader: loadedBack,
      entities: all.length,
      tools,
      schemas: checked.size,
      schemaShapesCompiled: compiled.size,
      entitiesByKind: kinds,
      devicesSkippedByReason: deviceSkips,
      exposesSkippedByReason: featureSkips,
      partlyKeptByReason: partialSkips,
    };
    console.log(`zigbee2mqtt definitions: ${JSON.stringify(summary, null, 2)}`);
    t.diagnostic(JSON.stringify(summary));
    assert.ok(all.length > 20_000, `expected tens of thousands of entities, got ${all.length}`);
    for (const kind of ['light', 'switch', 'cover', 'lock', 'climate', 'fan', 'sensor', 'binary_sensor', 'number', 'select', 'button']) {
      assert.ok(kinds[kind] > 0, `no ${kind} at all`);
    }

    // The adapter, fed the whole list as one bridge/devices message: every device lands, every skip is logged.
    const logs = logSink('debug');
    const connection = Object.assign(new EventEmitter(), {
      connected: true,
      subscribe() {},
      unsubscribe() {},
      publish: async () => {},
    }) as unknown as MqttConnection;
    const registry = new DeviceRegistry();
    const adapter = new Zigbee2mqttAdapter({ prefix: 'zigbee2mqtt', refreshAfterMs: 0 });
    adapter.start({ connection, registry, log: logs.log, config: {} as never });
    connection.emit('message', 'zigbee2mqtt/bridge/devices', Buffer.from(JSON.stringify(entries)), true);
    // A list this long is converted a slice at a time, the event loop free in between (CONVERT_SLICE).
    assert.equal(registry.devices().length, 0, 'not converted in one go');
    await waitFor('every device in the registry', () => registry.devices().length > 0, 60_000);
    adapter.stop();
    assert.equal(registry.devices().length, devices);
    assert.equal(registry.entities().length, all.length);
    // Every skipped device is logged, bounded (a few lines of their own, then one summary with the count).
    const skippedLines = logs.find(/^zigbee2mqtt: skipped /);
    const own = skippedLines.filter((l) => l.skippedCount === undefined);
    const summed = skippedLines.reduce((n, l) => n + (typeof l.skippedCount === 'number' ? l.skippedCount : 0), 0);
    assert.equal(own.length + summed, definitions - devices, 'every skipped device logged');
    assert.ok(skippedLines.length <= LINE_BUDGET.each, `${skippedLines.length} lines`);
    for (const line of own) assert.ok(typeof line.reason === 'string' && line.reason.length > 0, JSON.stringify(line));
    const partLines = logs.find(/exposes of .* have no tool of their own|more devices have exposes with no tool of their own/);
    assert.ok(partLines.length > 0 && partLines.length <= LINE_BUDGET.each, `${partLines.length} lines`);
    assert.ok(SOURCE_PRIORITY.zigbee2mqtt < SOURCE_PRIORITY.homeassistant);
  });
});
