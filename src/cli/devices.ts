// `hearth devices`: the home's devices, entities and their current state.
import type { Command } from 'commander';
import type { Bridge } from '../bridge.js';
import type { CommandOutput } from '../daemon/protocol.js';
import { configOrExit, databasePathOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { answer } from './via-daemon.js';

export interface DevicesParams {
  json?: boolean;
}

export function registerDevices(program: Command): void {
  withConfigOptions(program.command('devices'))
    .description("list devices, entities and their current state (from the running daemon, else from the broker's retained messages)")
    .option('--json', 'print JSON')
    .option('--wait <ms>', 'without a daemon: how long to wait for state to arrive', '3000')
    .action(async (flags: CommonFlags & { json?: boolean; wait: string }) => {
      const params: DevicesParams = { json: flags.json };
      await answer(await databasePathOrExit(flags), flags, 'devices', { ...params }, async () => {
        const loaded = await configOrExit(flags);
        const { Bridge } = await import('../bridge.js');
        const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
        // A command that only reads announces nothing on the user's broker.
        const bridge = await Bridge.start({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
        try {
          if (!bridge.connection.connected) {
            return { stdout: '', stderr: `hearth: cannot reach the broker at ${bridge.connection.options.url}: is \`hearth start\` running?\n`, exitCode: 1 };
          }
          // Discovered devices arrive as retained messages after connecting: wait for them to stop coming too.
          await bridge.settle(Number(flags.wait) || 3000, { quietMs: 500 });
          return devicesOutput(bridge, params);
        } finally {
          await bridge.close();
        }
      });
    });
}

/** What `hearth devices` prints, from a running bridge (the daemon's or the command's own). */
export async function devicesOutput(bridge: Bridge, params: DevicesParams): Promise<CommandOutput> {
  const { formatAge, formatState, stateJson, table } = await import('./format.js');
  const now = Date.now();
  const devices = bridge.registry.devices();
  if (params.json) {
    const out = devices.map((d) => ({
      id: d.id,
      name: d.name,
      area: d.area ?? null,
      manufacturer: d.manufacturer ?? null,
      model: d.model ?? null,
      source: d.source,
      entities: d.entities.map((e) => stateJson(e, bridge.cache.get(e.id), now)),
    }));
    return { stdout: `${JSON.stringify(out, null, 2)}\n` };
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
  const head = `${devices.length} devices, ${rows.length - 1} entities\n`;
  if (!devices.length) return { stdout: `${head}\n${await nothingFound(bridge)}\n` };
  return { stdout: `${head}\n${table(rows)}\n` };
}

/** Where a newcomer with no devices should look: the sources read, and the demo being off. */
async function nothingFound(bridge: Bridge): Promise<string> {
  const { demoEnabled } = await import('../bridge.js');
  const d = bridge.config.discovery;
  const files = bridge.paths.length
    ? `device files in ${bridge.paths.join(', ')} (${bridge.deviceFiles.length} read${bridge.deviceProblems.length ? `, ${bridge.deviceProblems.length} with problems` : ''})`
    : 'device files (none: no --devices and no ./devices folder)';
  const sources = [
    files,
    d.homeassistant.enabled ? `Home Assistant discovery (${d.homeassistant.prefix}/#)` : 'Home Assistant discovery (off)',
    d.zigbee2mqtt.enabled ? `Zigbee2MQTT (${d.zigbee2mqtt.prefix}/bridge/devices)` : 'Zigbee2MQTT (off)',
    d.homie.enabled ? `Homie (${d.homie.prefix}/#)` : 'Homie (off)',
  ];
  const lines = [`No devices found. Looked at: ${sources.join('; ')}.`];
  if (!demoEnabled(bridge.config)) lines.push('The demo home is off (--demo turns it on; it is on by default only with the embedded broker).');
  return lines.join('\n');
}
