// `hearth devices`: the home's devices, entities and their current state.
import type { Command } from 'commander';
import { Bridge } from '../bridge.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { formatAge, formatState, stateJson, table } from './format.js';

export function registerDevices(program: Command): void {
  withConfigOptions(program.command('devices'))
    .description("list devices, entities and their current state (from the broker's retained messages)")
    .option('--json', 'print JSON')
    .option('--wait <ms>', 'how long to wait for state to arrive', '3000')
    .action(async (flags: CommonFlags & { json?: boolean; wait: string }) => {
      const loaded = configOrExit(flags);
      const log = loggerFor(loaded, flags.logLevel ?? 'warn');
      const bridge = await Bridge.start({ config: loaded.config, log, connectWaitMs: 5000 });
      try {
        if (!bridge.connection.connected) {
          process.stderr.write(`hearth: cannot reach the broker at ${bridge.connection.options.url}: is \`hearth start\` running?\n`);
          process.exitCode = 1;
          return;
        }
        await bridge.settle(Number(flags.wait) || 3000);
        const now = Date.now();
        const devices = bridge.registry.devices();
        if (flags.json) {
          const out = devices.map((d) => ({
            id: d.id,
            name: d.name,
            area: d.area ?? null,
            manufacturer: d.manufacturer ?? null,
            model: d.model ?? null,
            source: d.source,
            entities: d.entities.map((e) => stateJson(e, bridge.cache.get(e.id), now)),
          }));
          process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          return;
        }
        const rows = [['ENTITY', 'KIND', 'AREA', 'STATE', 'AVAILABLE', 'UPDATED']];
        for (const d of devices) {
          for (const e of d.entities) {
            const s = bridge.cache.get(e.id);
            rows.push([
              e.id,
              e.kind,
              e.area ?? '',
              formatState(e, s),
              s?.available === null ? '?' : s?.available ? 'yes' : 'no',
              !s?.updatedAt ? 'never' : s.retained ? 'retained' : formatAge(now - s.updatedAt),
            ]);
          }
        }
        process.stdout.write(`${devices.length} devices, ${rows.length - 1} entities\n\n${table(rows)}\n`);
      } finally {
        await bridge.close();
      }
    });
}
