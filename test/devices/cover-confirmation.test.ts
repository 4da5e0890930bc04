// When a cover's open or close is confirmed: at its end position, and not while it still says it is moving
// (a garage may report position 100 on its way, then "open").
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { isConfirmedBy } from '../../src/devices/commands.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { EntityState } from '../../src/devices/state-cache.js';

const { devices } = loadDeviceFiles([fileURLToPath(new URL('../../devices/demo', import.meta.url))]);
const garage = devices.flatMap((d) => d.entities).find((e) => e.id === 'garage_door.door')!;
const state = (value: string, position: number): EntityState =>
  ({ value, attributes: { position }, available: true, updatedAt: 1, retained: false }) as unknown as EntityState;

it('an open is confirmed at the end position once the cover stops saying "opening"', () => {
  assert.equal(isConfirmedBy(garage, { action: 'open' }, state('opening', 60)), false);
  assert.equal(isConfirmedBy(garage, { action: 'open' }, state('opening', 100)), false, 'still moving');
  assert.equal(isConfirmedBy(garage, { action: 'open' }, state('open', 100)), true);
  assert.equal(isConfirmedBy(garage, { action: 'open' }, state('open', 40)), false, 'partly open is not open');
});

it('a close is confirmed at position 0 once the cover stops saying "closing"', () => {
  assert.equal(isConfirmedBy(garage, { action: 'close' }, state('closing', 0)), false, 'still moving');
  assert.equal(isConfirmedBy(garage, { action: 'close' }, state('closed', 0)), true);
});
