// What the Wyoming tests repeat: Hearth's Wyoming server on a test's home, and the real Python `wyoming`
// package's client to talk to it, started after the home and stopped before it closes.
import { before } from 'node:test';
import type { WyomingSatellite } from '../../src/config/schema.js';
import { WyomingServer } from '../../src/wyoming/server.js';
import { late } from '../helpers/late.js';
import { type HomeInTest, started } from '../helpers/use-home.js';
import { PythonWyoming } from './python-wyoming.js';

export function useWyoming(home: HomeInTest, satellites: WyomingSatellite[]): { py: PythonWyoming; wy: WyomingServer } {
  let py: PythonWyoming | undefined;
  let wy: WyomingServer | undefined;
  before(async () => {
    py = await PythonWyoming.start();
    home.cleanup(() => py?.stop());
    wy = await WyomingServer.start({ hearth: home.hearth, port: 0, satellites, log: home.logs.log.child({ part: 'wyoming' }) });
    home.cleanup(() => wy?.close());
  });
  return { py: late(() => started(py, 'the Python wyoming client')), wy: late(() => started(wy, 'the Wyoming server')) };
}
