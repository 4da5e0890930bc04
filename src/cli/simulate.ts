// `hearth simulate`: run simulated devices against a broker (the demo home by default).
import type { Command } from 'commander';
import { DEMO_DEVICES, brokerUrl } from '../bridge.js';
import { loadDeviceFiles } from '../devices/loader.js';
import { startSimulator } from '../simulator/simulator.js';
import { CliFailure, collect } from './failure.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';

export function registerSimulate(program: Command): void {
  withConfigOptions(program.command('simulate'))
    .description('simulate devices from device files on a broker (default: the demo home)')
    .option('--only <id>', 'simulate only this device id (repeat for more)', collect)
    .action(async (flags: CommonFlags & { only?: string[] }) => {
      const loaded = await configOrExit(flags);
      const log = await loggerFor(loaded);
      const { devices, problems } = loadDeviceFiles(flags.devices ? (loaded.config.devices.paths ?? []) : [DEMO_DEVICES]);
      for (const p of problems) log.error({ file: p.file }, `device file skipped: ${p.path}: ${p.message}`);
      const chosen = flags.only ? devices.filter((d) => flags.only!.includes(d.id)) : devices;
      const unknown = (flags.only ?? []).filter((id) => !devices.some((d) => d.id === id));
      if (unknown.length) {
        throw new CliFailure(`--only: no such device to simulate: ${unknown.join(', ')} (known: ${devices.map((d) => d.id).join(', ')})`);
      }
      const url = brokerUrl(loaded.config);
      const sim = await startSimulator({ url, devices: chosen, log });
      process.stdout.write(`Simulating ${chosen.length} devices on ${url}: ${chosen.map((d) => d.id).join(', ')}\nPress Ctrl+C to stop.\n`);
      const stop = async () => {
        await sim.close();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });
}
