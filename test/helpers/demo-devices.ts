// The demo home's device files copied into a test's folder, each file's text changed as the test needs it (quicker
// travel, a shorter confirmation timeout), for a Hearth started on them with `--devices` or `devices.paths`.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_DEVICES } from '../../src/bridge.js';

/** Copies the demo device files into `<dir>/devices` (each file's text through `edit`); returns that folder. */
export function copyDemoDevices(dir: string, edit: (text: string) => string = (text) => text): string {
  const devices = join(dir, 'devices');
  mkdirSync(devices, { recursive: true });
  for (const f of readdirSync(DEMO_DEVICES)) writeFileSync(join(devices, f), edit(readFileSync(join(DEMO_DEVICES, f), 'utf8')));
  return devices;
}
