// `hearth devices`: the home's devices, entities and their current state.
import type { Command } from 'commander';
import type { DeviceJson, SourcesAnswer } from '../daemon/schema.js';
import type { RefusedClaimJson } from '../present/refused-claim.js';
import { hearthCommand } from './command-name.js';
import { formatAge, table } from './format.js';
import { configOrExit, databasePathOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { registerDeviceSetters } from './home.js';
import { ask, askHearth, printJson } from './via-daemon.js';

export function registerDevices(program: Command): void {
  const group = program
    .command('devices')
    .description('the devices: list them with their state (what `hearth devices` alone does), and set their area, name, aliases and exposure');
  withConfigOptions(group.command('list', { isDefault: true }))
    .description("list devices, entities and their current state (from the running daemon, else from the broker's retained messages)")
    .option('--json', "print the daemon's answer: devices with their entities' state, as JSON")
    .option('--wait <ms>', 'without a daemon: how long to wait for state to arrive', '3000')
    .action(async (flags: CommonFlags & { json?: boolean; wait: string }) => {
      const db = await databasePathOrExit(flags);
      let looked: SourcesAnswer | undefined;
      let refused: RefusedClaimJson[] | undefined;
      const list = await ask(db, flags, 'devices', {}, async () => {
        const loaded = await configOrExit(flags);
        const { Bridge } = await import('../bridge.js');
        const { devices, sources } = await import('../daemon/methods/devices.js');
        const { CliFailure } = await import('./failure.js');
        const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
        // A command that only reads announces nothing on the user's broker.
        const bridge = await Bridge.start({ config: loaded.config, log, connectWaitMs: 5000, announce: false });
        try {
          if (!bridge.connection.connected) {
            throw new CliFailure(`cannot reach the broker at ${bridge.connection.options.url}: is \`${hearthCommand()} start\` running?`, 1);
          }
          // Discovered devices arrive as retained messages after connecting: wait for them to stop coming too.
          await bridge.settle(Number(flags.wait) || 3000, { quietMs: 500 });
          looked = sources(bridge);
          const { refusedClaimsJson } = await import('../present/refused-claim.js');
          refused = refusedClaimsJson(bridge);
          return devices(bridge);
        } finally {
          await bridge.close();
        }
      });
      if (flags.json) return printJson(list);
      if (!list.length && !looked) looked = await ask(db, flags, 'sources', {}, () => Promise.reject(new Error('unreachable')));
      refused ??= await ask(db, flags, 'devices.refused', {}, () => []);
      process.stdout.write(devicesText(list, looked, refused));
    });
  withConfigOptions(group.command('forget'))
    .description(
      'forget a device that is gone for good (as Home Assistant\'s "delete device"): Hearth keeps an absent device\'s command topics and names from newcomers until you say so',
    )
    .argument('<device>', "the device's id, as `hearth devices` or a refusal names it")
    .option('--json', 'print the answer as JSON')
    .action(async (device: string, flags: CommonFlags & { json?: boolean }) => {
      const { forgetDevice } = await import('../daemon/methods/devices.js');
      const answer = await askHearth(flags, 'devices.forget', { device }, (h, p) => forgetDevice(h.bridge, p as { device: string }), {
        devices: true,
        typed: { device: '<device>' },
      });
      if (flags.json) return printJson(answer);
      process.stdout.write(
        answer.present
          ? `forgot what ${answer.device} no longer has (${answer.forgotten.join(', ')}): a newcomer may now take their topics and names\n`
          : `forgot ${answer.device} (${answer.forgotten.join(', ')}): a newcomer may now take its command topics and names\n`,
      );
    });
  withConfigOptions(group.command('confirm-move'))
    .description(
      'confirm that a device moved (you renamed it in Zigbee2MQTT, or changed its discovery config): Hearth keeps a device on the command topics it holds until you say so, as a forged rename looks the same on the broker',
    )
    .argument('<device>', "the device's id, as `hearth devices` or the refusal names it")
    .option('--to <topic>', 'the command topic you were shown: nothing moves if the device is going elsewhere now')
    .option('--json', 'print the answer as JSON')
    .action(async (device: string, flags: CommonFlags & { json?: boolean; to?: string }) => {
      const { confirmMove } = await import('../daemon/methods/devices.js');
      const params = { device, ...(flags.to !== undefined ? { to: flags.to } : {}) };
      const answer = await askHearth(flags, 'devices.confirm-move', params, (h, p) => confirmMove(h.bridge, p as { device: string; to?: string }), {
        devices: true,
        typed: { device: '<device>' },
      });
      if (flags.json) return printJson(answer);
      for (const m of answer.moved) process.stdout.write(`${m.entity}: moved from ${m.from.join(', ') || '(nothing)'} to ${m.to.join(', ')}\n`);
    });
  registerDeviceSetters(group);
}

/** The devices as a table, or where a newcomer with none should look; then the entities left out for their command topic. */
export function devicesText(list: DeviceJson[], looked?: SourcesAnswer, refused: readonly RefusedClaimJson[] = []): string {
  const rows = [['NAME', 'AREA', 'KIND', 'STATE', 'AVAILABLE', 'UPDATED', 'ENTITY']];
  for (const d of list) {
    for (const e of d.entities) {
      rows.push([
        e.exposed === false ? `${e.name} (not exposed)` : e.name,
        e.area ?? '',
        e.kind,
        e.words,
        e.notAnswering ? `no answer since ${e.notAnswering.afterFailover ? 'failover' : 'a command'}` : e.available === null ? '?' : e.available ? 'yes' : 'no',
        !e.updatedAt ? 'never' : e.retained ? 'retained' : formatAge(e.ageMs ?? 0),
        e.id,
      ]);
    }
  }
  const head = `${list.length} devices, ${rows.length - 1} entities\n`;
  const left = refused.length ? `\nNo command for ${refused.length} ${refused.length === 1 ? 'entity' : 'entities'} (left out):\n${leftOutText(refused)}` : '';
  if (!list.length) return `${head}\n${looked ? nothingFound(looked) : 'No devices found.'}\n${left}`;
  return `${head}\n${table(rows)}\n${left}`;
}

/**
 * The entities left out: those of a device its source moved grouped under it (one move to confirm), those waiting
 * on an away device grouped under it (one device to forget, however many of a newcomer's entities claim its
 * topics), then the rest as they are.
 */
function leftOutText(refused: readonly RefusedClaimJson[]): string {
  const away = new Map<string, RefusedClaimJson[]>();
  const moved = new Map<string, RefusedClaimJson[]>();
  for (const r of refused) if (r.ownerAway && r.ownerDevice) away.set(r.ownerDevice, [...(away.get(r.ownerDevice) ?? []), r]);
  for (const r of refused) if (r.movedFrom) moved.set(r.device, [...(moved.get(r.device) ?? []), r]);
  let out = '';
  // A device its source moved (a rename): one thing to confirm, however many of its entities wait on it.
  for (const [device, list] of moved) {
    const these = list.length === 1 ? 'this entity' : `these ${list.length} entities`;
    out += `  ${device} was moved by its source (a rename in Zigbee2MQTT, or a forged message: on the broker they look the same); it keeps the command topics it holds and ${these} get no command until an owner confirms; if you renamed it, \`hearth devices confirm-move ${device}\`:\n`;
    for (const r of list) out += `    ${r.name} (${r.entity}): to ${r.topic}${r.movedFrom!.length ? ` from ${r.movedFrom!.join(', ')}` : ''}\n`;
  }
  for (const [device, list] of away) {
    const these = list.length === 1 ? 'this entity claims' : `these ${list.length} entities claim`;
    const kinds = list.every((r) => !r.read) ? 'command' : list.every((r) => r.read) ? 'state' : 'command and state';
    out += `  ${device} is away (remembered, not in the home now) and holds the ${kinds} topics ${these}; if it is really gone, \`hearth devices forget ${device}\` frees them:\n`;
    for (const r of list)
      out += `    ${r.name} (${r.entity}): its ${r.read ? 'state topic' : 'command topic'} ${r.topic} is ${r.read ? 'read' : 'held'} by ${r.owner}\n`;
  }
  for (const r of refused) if (!(r.ownerAway && r.ownerDevice) && !r.movedFrom) out += `  ${r.name} (${r.entity}): ${r.words}\n`;
  return out;
}

/** Where a newcomer with no devices should look: the sources read, and the demo being off. */
function nothingFound(s: SourcesAnswer): string {
  const f = s.deviceFiles;
  const files = f.paths.length
    ? `device files in ${f.paths.join(', ')} (${f.read} read${f.problems ? `, ${f.problems} with problems` : ''})`
    : 'device files (none: no --devices and no ./devices folder)';
  const names = { homeassistant: 'Home Assistant discovery', zigbee2mqtt: 'Zigbee2MQTT', homie: 'Homie' } as const;
  const found = (Object.keys(names) as Array<keyof typeof names>).map((k) => `${names[k]} (${s.discovery[k].enabled ? s.discovery[k].topic : 'off'})`);
  const lines = [`No devices found. Looked at: ${[files, ...found].join('; ')}.`];
  if (!s.demo) lines.push('The demo home is off (--demo turns it on; it is on by default only with the embedded broker).');
  return lines.join('\n');
}
