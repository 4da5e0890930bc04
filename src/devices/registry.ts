// Every device the bridge knows, from every source. Device files win over
// discovery: a device declared in devices/ replaces a discovered one with the
// same id. Listeners hear about each change once, with the whole new set.
import { EventEmitter } from 'node:events';
import type { Device, Entity } from './model.js';

export interface RegistryEvents {
  changed: [devices: Device[]];
}

export class DeviceRegistry extends EventEmitter<RegistryEvents> {
  /** source name -> (priority, devices by id); a lower priority number wins. */
  private sources = new Map<string, { priority: number; devices: Map<string, Device> }>();
  private merged: Device[] = [];
  private entityIndex = new Map<string, Entity>();
  private deviceIndex = new Map<string, Device>();

  /** Replace everything one source knows. */
  setSource(name: string, priority: number, devices: Device[]): void {
    this.sources.set(name, { priority, devices: new Map(devices.map((d) => [d.id, d])) });
    this.rebuild();
  }

  /** Add, replace or (with `undefined`) remove one device of a source. */
  upsert(name: string, priority: number, id: string, device: Device | undefined): void {
    let src = this.sources.get(name);
    if (!src) this.sources.set(name, (src = { priority, devices: new Map() }));
    if (device) src.devices.set(id, device);
    else if (!src.devices.delete(id)) return;
    this.rebuild();
  }

  private rebuild(): void {
    const byId = new Map<string, { priority: number; device: Device }>();
    for (const { priority, devices } of this.sources.values()) {
      for (const device of devices.values()) {
        const held = byId.get(device.id);
        if (!held || priority < held.priority) byId.set(device.id, { priority, device });
      }
    }
    this.merged = [...byId.values()].map((v) => v.device).sort((a, b) => a.id.localeCompare(b.id));
    this.deviceIndex = new Map(this.merged.map((d) => [d.id, d]));
    this.entityIndex = new Map(this.merged.flatMap((d) => d.entities.map((e) => [e.id, e] as const)));
    this.emit('changed', this.merged);
  }

  devices(): Device[] {
    return this.merged;
  }

  entities(): Entity[] {
    return [...this.entityIndex.values()];
  }

  device(id: string): Device | undefined {
    return this.deviceIndex.get(id);
  }

  entity(id: string): Entity | undefined {
    return this.entityIndex.get(id);
  }
}
