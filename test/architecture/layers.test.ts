// Layers point one way: the foundations (src/mqtt, src/db, src/util, src/config, src/core) know nothing of
// devices, policy, tools or engines, and devices, policy and audit know nothing of tools or engines. The broker
// ACL export once read devices' topics from src/mqtt, the one place a lower layer reached up (issue 40): what
// knows devices and the broker together lives in src/devices.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers/cli.js';

const SRC = join(ROOT, 'src');
const ABOVE_FOUNDATIONS = [
  'devices',
  'policy',
  'audit',
  'tools',
  'agent',
  'history',
  'http',
  'mcp',
  'cli',
  'daemon',
  'wyoming',
  'present',
  'simulator',
  'auth',
];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The src/ folders a folder's files import from (by relative paths that leave the folder). */
function reachesInto(folder: string, forbidden: readonly string[]): string[] {
  const found: string[] = [];
  for (const file of files(join(SRC, folder))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const target = relative(SRC, join(file, '..', m[1])).split('/')[0];
      if (forbidden.includes(target)) found.push(`${relative(ROOT, file)} imports ${m[1]}`);
    }
  }
  return found;
}

describe('layers', () => {
  for (const folder of ['mqtt', 'db', 'util', 'config', 'core']) {
    it(`src/${folder} imports nothing from the layers above it`, () => {
      assert.deepEqual(reachesInto(folder, ABOVE_FOUNDATIONS), []);
    });
  }
  for (const folder of ['devices', 'policy', 'audit']) {
    it(`src/${folder} imports nothing from tools or engines`, () => {
      assert.deepEqual(reachesInto(folder, ['tools', 'agent']), []);
    });
  }
});
