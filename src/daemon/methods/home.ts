// `home.*`: the home as people arrange it (src/devices/home): areas, floors, and per device or entity its
// area, name, aliases and exposure; export and import as a file. Errors name the param that was wrong.
import { exportHome, importHome, type ImportReport } from '../../devices/home/home-file.js';
import { HomeError, type AreaJson, type FloorJson, type HomeDeviceJson, type HomeSetup } from '../../devices/home/home-setup.js';
import type { Hearth } from '../../hearth.js';
import { badParams, notFound, ControlError, NOT_DONE } from '../protocol.js';
import type { HomeAreaParams, HomeDeviceParams, HomeEntityParams, HomeFloorParams } from '../schema.js';

/** A HomeError as the control protocol says it. */
export function homeFailure(err: unknown): unknown {
  if (!(err instanceof HomeError)) return err;
  if (err.code === 'not_found') return notFound(err.message);
  if (err.code === 'conflict') return new ControlError(NOT_DONE, err.message);
  return badParams(err.message);
}

function run<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw homeFailure(err);
  }
}

const tri = (on: boolean | undefined, reset: boolean | undefined): boolean | undefined => (reset ? undefined : on);

export function homeDevices(hearth: Hearth): HomeDeviceJson[] {
  return hearth.home.devices();
}

export function homeAreas(hearth: Hearth): AreaJson[] {
  return hearth.home.areas();
}

export function homeFloors(hearth: Hearth): FloorJson[] {
  return hearth.home.floors();
}

/** One device's changes, in the order: area, name, aliases, exposure. */
export function homeDevice(home: HomeSetup, p: HomeDeviceParams): HomeDeviceJson {
  return run(() => {
    let device = home.device(p.device);
    if (p.area !== undefined || p.noArea || p.resetArea)
      device = home.setDeviceArea(device.id, p.resetArea ? undefined : p.noArea ? null : p.area, { create: p.create });
    if (p.name !== undefined || p.resetName) device = home.renameDevice(device.id, p.resetName ? undefined : p.name);
    if (p.aliases !== undefined) device = home.setDeviceAliases(device.id, p.aliases);
    if (p.exposed !== undefined || p.resetExposed) device = home.exposeDevice(device.id, tri(p.exposed, p.resetExposed));
    return home.deviceJson(device);
  });
}

export function homeEntity(home: HomeSetup, p: HomeEntityParams): HomeDeviceJson {
  return run(() => {
    let entity = home.entity(p.entity);
    if (p.area !== undefined || p.noArea || p.resetArea)
      entity = home.setEntityArea(entity.id, p.resetArea ? undefined : p.noArea ? null : p.area, { create: p.create });
    if (p.exposed !== undefined || p.resetExposed) entity = home.exposeEntity(entity.id, tri(p.exposed, p.resetExposed));
    return home.deviceJson(home.device(entity.deviceId));
  });
}

export function homeArea(home: HomeSetup, p: HomeAreaParams): AreaJson | { removed: string; devices: number } {
  return run(() => {
    if (p.op === 'add') return home.addArea(p.area, { floor: p.floor, aliases: p.aliases });
    if (p.op === 'remove') return home.removeArea(p.area);
    return home.updateArea(p.area, { name: p.name, floor: p.noFloor ? null : p.floor, aliases: p.aliases });
  });
}

export function homeFloor(home: HomeSetup, p: HomeFloorParams): FloorJson | { removed: string; areas: number } {
  return run(() => {
    if (p.op === 'add') return home.addFloor(p.floor, { level: p.level, aliases: p.aliases });
    if (p.op === 'remove') return home.removeFloor(p.floor);
    return home.updateFloor(p.floor, { name: p.name, level: p.noLevel ? null : p.level, aliases: p.aliases });
  });
}

export function homeExport(hearth: Hearth): { text: string } {
  return { text: exportHome(hearth.bridge.registry.home, hearth.bridge.registry.devices()) };
}

export function homeImport(hearth: Hearth, p: { text: string }): ImportReport {
  return run(() => importHome(hearth.bridge.registry.home, hearth.bridge.registry.devices(), p.text));
}
