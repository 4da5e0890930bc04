// Shared by the policy tests: a migrated SQLite file in a temp dir, and requests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/db/database.js';
import type { PolicyRequest } from '../../src/policy/types.js';

export interface TempDb {
  db: Db;
  path: string;
  /** Another connection to the same file (another process, the CLI). */
  open(): Db;
  close(): void;
}

export function tempDb(): TempDb {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-policy-'));
  const path = join(dir, 'hearth.db');
  const db = openDatabase(path);
  const others: Db[] = [];
  return {
    db,
    path,
    open() {
      const other = openDatabase(path);
      others.push(other);
      return other;
    },
    close() {
      for (const o of [...others, db]) if (o.open) o.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A call to turn on the living-room lamp by chat:alice (no roles), overridable. */
export function req(over: Partial<PolicyRequest> & { who?: string; roles?: string[] } = {}): PolicyRequest {
  const { who, roles, ...rest } = over;
  return {
    principal: { id: who ?? 'chat:alice', roles: roles ?? [] },
    tool: 'living_room_lamp',
    capability: 'actuator',
    action: 'turn_on',
    entityId: 'living_room.lamp',
    area: 'Living Room',
    kind: 'light',
    args: {},
    ...rest,
  };
}

export const lockReq = (over: Partial<PolicyRequest> & { who?: string; roles?: string[] } = {}): PolicyRequest =>
  req({ tool: 'front_door_lock', entityId: 'front_door.lock', area: 'Hall', kind: 'lock', action: 'unlock', ...over });

export const garageReq = (over: Partial<PolicyRequest> & { who?: string; roles?: string[] } = {}): PolicyRequest =>
  req({ tool: 'garage_door', entityId: 'garage.door', area: 'Garage', kind: 'cover', deviceClass: 'garage', action: 'open', ...over });

/** Local time on a known date: 2024-01-01 is a Monday. */
export function localAt(day: 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun', hhmm: string, seconds = 0): Date {
  const offset = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].indexOf(day);
  const [h, m] = hhmm.split(':').map(Number);
  return new Date(2024, 0, 1 + offset, h, m, seconds);
}
