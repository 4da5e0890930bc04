// Tool set shapes, regeneration when devices change, principal filtering, image fitting.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import { parseDeviceFile } from '../../src/devices/loader.js';
import type { Device } from '../../src/devices/model.js';
import { chooseShape, estimateTokens, generateTools, toolSpecs } from '../../src/tools/generator.js';
import { fitImage } from '../../src/tools/images.js';
import { OWNER } from '../helpers/home.js';
import { useHome } from '../helpers/use-home.js';

function bigHome(n: number): Device[] {
  const kinds = ['switch', 'light', 'sensor', 'binary_sensor', 'cover', 'lock'];
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const kind = kinds[i % kinds.length];
    const cmd = ['sensor', 'binary_sensor'].includes(kind) ? '' : `, command_topic: big/${i}/set`;
    lines.push(
      `      e${i}: { kind: ${kind}, name: "Room ${Math.floor(i / 6)} ${kind} ${i}", area: "Room ${Math.floor(i / 6)}", state_topic: big/${i}${cmd} }`,
    );
  }
  const parsed = parseDeviceFile('big.yaml', `devices:\n  - id: big\n    entities:\n${lines.join('\n')}\n`);
  assert.ok('devices' in parsed);
  return parsed.devices;
}

const noop = async () => ({});

describe('tool set shapes', () => {
  it('auto switches to grouped above the configured size', () => {
    assert.equal(chooseShape(40, { shape: 'auto', groupAbove: 40 }), 'per-entity');
    assert.equal(chooseShape(41, { shape: 'auto', groupAbove: 40 }), 'grouped');
    assert.equal(chooseShape(1000, { shape: 'per-entity', groupAbove: 40 }), 'per-entity');
  });

  it('a home of 660 entities stays a handful of grouped tools within the token budget', () => {
    const entities = bigHome(660)[0].entities;
    const grouped = generateTools(entities, { shape: 'auto', groupAbove: 40 }, noop);
    assert.equal(grouped.shape, 'grouped');
    assert.deepEqual(grouped.tools.map((t) => t.name).sort(), [
      'control_covers',
      'control_group',
      'control_lights',
      'control_locks',
      'control_switches',
      'explain_policy',
      'find_entities',
      'get_audit',
      'get_history',
      'get_state',
    ]);
    const tokens = estimateTokens(toolSpecs(grouped.tools));
    assert.ok(tokens < 8000, `grouped specs are ~${tokens} tokens`);
    const perEntity = generateTools(entities, { shape: 'per-entity', groupAbove: 40 }, noop);
    assert.equal(perEntity.tools.length, 665, '660 entity tools, get_state, get_history, get_audit, explain_policy and control_group');
    assert.ok(estimateTokens(toolSpecs(perEntity.tools)) > 10 * tokens, 'per-entity would blow the budget');
    // Above the enum limit the entity argument is a free id checked at call time.
    const lights = grouped.tools.find((t) => t.name === 'control_lights')!;
    assert.equal((lights.parameters.properties as Record<string, { enum?: unknown }>).entity.enum, undefined);
  });
});

describe('tool set on a running home', () => {
  const home = useHome({ shape: 'grouped' });

  it('grouped tools act through the entity argument and check each device', async () => {
    const call = (tool: string, args: Record<string, unknown>) => home.hearth.tools.call(tool, args, OWNER);
    assert.deepEqual(
      home.hearth.tools
        .all()
        .map((t) => t.name)
        .sort(),
      [
        'control_climate',
        'control_covers',
        'control_group',
        'control_lights',
        'control_locks',
        'control_sirens',
        'control_switches',
        'control_vacuums',
        'explain_policy',
        'find_entities',
        'get_audit',
        'get_camera_image',
        'get_history',
        'get_state',
      ],
    );
    assert.match(
      (await call('control_lights', { entity: 'kitchen_light.light', action: 'turn_on', brightness: 30 })).text!,
      /^confirmed: .*brightness 12% \(30 of 254\)/,
    );
    const wrongKind = await call('control_lights', { entity: 'living_room_lamp.lamp', action: 'turn_on' });
    assert.equal(wrongKind.isError, true);
    assert.match(wrongKind.text!, /"Living room lamp" is a switch, not a light/);
    const found = await call('find_entities', { query: 'front door' });
    assert.match(found.text!, /front_door\.lock: "Front door lock", lock, area "Entrance"; use control_locks/);
    assert.match(found.text!, /front_door\.camera: .*; use get_camera_image/);
    const img = await call('get_camera_image', { camera: 'front_door.camera' });
    assert.equal(img.images?.[0].mimeType, 'image/jpeg');
  });

  it('regenerates when devices appear, change or vanish, and announces only real changes', async () => {
    const events: string[][] = [];
    home.hearth.tools.on('changed', (tools) => events.push(tools.map((t) => t.name)));
    const extra = parseDeviceFile(
      'extra.yaml',
      'devices:\n  - id: fan\n    area: Attic\n    entities:\n      relay: { kind: switch, name: Attic fan, state_topic: fan/state, command_topic: fan/set }\n',
    );
    assert.ok('devices' in extra);
    home.hearth.bridge.registry.setSource('test', 5, extra.devices);
    assert.equal(events.length, 1);
    assert.ok(events[0].includes('control_switches'));
    const switches = home.hearth.tools.get('control_switches')!;
    assert.deepEqual(switches.meta.entityIds, ['fan.relay', 'living_room_lamp.lamp']);
    // The grouped schema does not list the entities: it stays the same size however many there are.
    assert.equal((switches.parameters.properties as Record<string, { enum?: string[] }>).entity.enum, undefined);
    home.hearth.bridge.registry.setSource('test', 5, extra.devices);
    assert.equal(events.length, 1, 'the same devices again is no change');
    home.hearth.bridge.registry.setSource('test', 5, []);
    assert.equal(events.length, 2);
    assert.deepEqual(home.hearth.tools.get('control_switches')!.meta.entityIds, ['living_room_lamp.lamp']);
  });

  it('leaves out the tools a principal may never use', () => {
    home.hearth.policy.add({ subject: 'role:guest', targetType: 'any', target: '*', action: 'actuate', effect: 'deny', priority: 1000 });
    const guestTools = home.hearth.tools
      .forPrincipal({ id: 'chat:visitor', roles: ['guest'] })
      .map((t) => t.name)
      .sort();
    // get_audit is for those who may read the audit (owners by default), not for a guest.
    assert.deepEqual(guestTools, ['explain_policy', 'find_entities', 'get_camera_image', 'get_history', 'get_state']);
    assert.equal(home.hearth.tools.forPrincipal(OWNER).length, home.hearth.tools.all().length);
  });
});

describe('camera images', () => {
  it('fits a large frame under the byte and size limits, and leaves a small one alone', async () => {
    const big = await sharp({ create: { width: 3000, height: 2000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } })
      .jpeg({ quality: 95 })
      .toBuffer();
    const fitted = await fitImage(big, 'image/jpeg', { maxImageBytes: 200_000, maxDimension: 1024 });
    assert.equal(fitted.resized, true);
    assert.ok(fitted.bytes.length <= 200_000, `${fitted.bytes.length} bytes`);
    const meta = await sharp(fitted.bytes).metadata();
    assert.ok(Math.max(meta.width!, meta.height!) <= 1024);
    const small = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#204060' } })
      .png()
      .toBuffer();
    const same = await fitImage(small, 'image/png');
    assert.equal(same.resized, false);
    assert.ok(same.bytes.equals(small));
  });
});
