// The home as people arrange it, from the command line: `hearth devices area|rename|alias|expose ...`,
// `hearth areas ...`, `hearth floors ...` and `hearth home export|import`. The daemon answers each with data
// (src/daemon/methods/home.ts); this file turns the answers into text.
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { HomeDeviceJson } from '../devices/home/home-setup.js';
import { CliFailure } from './failure.js';
import { table } from './format.js';
import { withConfigOptions, type CommonFlags } from './options.js';
import { askHearth, printJson } from './via-daemon.js';
import { shellWord } from '../util/shell-word.js';

type Flags = CommonFlags & { json?: boolean };

/** An entity id (`device.key`) names one entity; anything else (an id, a name) a device. */
const isEntityId = (ref: string): boolean => /^[a-z0-9][a-z0-9_-]*\.[a-z0-9_]+$/.test(ref);

function deviceText(d: HomeDeviceJson): string {
  const area = d.area ? `${d.area}${d.floor ? ` (${d.floor})` : ''}${d.areaFrom === 'source' ? ', from its source' : ''}` : 'no area';
  const lines = [`${d.name} (${d.id}): ${area}${d.aliases.length ? `; also called ${d.aliases.join(', ')}` : ''}`];
  if (!d.area && d.suggestedArea) lines.push(`  its name starts with the area ${d.suggestedArea}: hearth devices area ${d.id} "${d.suggestedArea}"`);
  for (const e of d.entities)
    lines.push(
      `  ${e.id}  ${e.kind}${e.category ? ` (${e.category})` : ''}  ${e.exposed ? 'exposed to agents' : 'not exposed to agents'}${e.area !== d.area ? `  area ${e.area ?? 'none'}` : ''}`,
    );
  return `${lines.join('\n')}\n`;
}

const deviceMethods = async () => import('../daemon/methods/home.js');

/**
 * Change a device (`home.device`), or the one entity an entity id names where `entities` allows it
 * (`home.entity`), and print the device as it is now. `arg` is how the command line calls the target.
 */
async function changeDevice(
  flags: Flags,
  target: string,
  change: Record<string, unknown>,
  typed: { arg: string } & Record<string, string>,
  entities: boolean,
): Promise<void> {
  const { homeDevice, homeEntity } = await deviceMethods();
  const { arg, ...rest } = typed;
  const d =
    entities && isEntityId(target)
      ? await askHearth(flags, 'home.entity', { entity: target, ...change }, (h, p) => homeEntity(h.home, p as never), {
          devices: true,
          typed: { entity: arg, ...rest },
        })
      : await askHearth(flags, 'home.device', { device: target, ...change }, (h, p) => homeDevice(h.home, p as never), {
          devices: true,
          typed: { device: arg, ...rest },
        });
  if (flags.json) return printJson(d);
  process.stdout.write(deviceText(d));
}

/** `hearth devices area|rename|alias|expose`: one device's place, name, aliases and exposure. */
export function registerDeviceSetters(devices: Command): void {
  withConfigOptions(devices.command('area'))
    .description(
      'put a device (all of it) in an area, or one entity (device.key) apart from its device; --none: in no area; --reset: where its source (or its device) says',
    )
    .argument('<device>', 'the device: its id, or its name as `hearth devices` shows it (Living room/Ceiling light); or an entity id')
    .argument('[area]', 'the area (an area `hearth areas` lists; --create adds a new one)')
    .option('--create', 'add the area if there is none of that name')
    .option('--none', 'in no area, whatever its source says')
    .option('--reset', "back to the area its source says (Zigbee2MQTT's <area>/ prefix, Home Assistant's suggested_area)")
    .option('--json', 'print the device as JSON')
    .action(async (device: string, area: string | undefined, flags: Flags & { create?: boolean; none?: boolean; reset?: boolean }) => {
      if (!area && !flags.none && !flags.reset)
        throw new CliFailure(`give an area, or --none, or --reset (e.g. hearth devices area ${shellWord(device)} <area>; \`hearth areas\` lists the areas)`);
      const change = {
        ...(area ? { area } : {}),
        ...(flags.create ? { create: true } : {}),
        ...(flags.none ? { noArea: true } : {}),
        ...(flags.reset ? { resetArea: true } : {}),
      };
      // An entity id (`device.key`) places that entity alone (a plug's power reading with the lamp it feeds).
      return changeDevice(flags, device, change, { arg: '<device>', area: '<area>' }, true);
    });

  withConfigOptions(devices.command('rename'))
    .description("the name a device is said by within its area (the source's name stays its own); --reset: the source's name again")
    .argument('<device>', 'the device: its id or its name')
    .argument('[name]', 'the new name ("Ceiling light": the area is said apart)')
    .option('--reset', "back to the source's name")
    .option('--json', 'print the device as JSON')
    .action(async (device: string, name: string | undefined, flags: Flags & { reset?: boolean }) => {
      if (!name && !flags.reset) throw new CliFailure('give the new name, or --reset');
      const change = { ...(name ? { name } : {}), ...(flags.reset ? { resetName: true } : {}) };
      return changeDevice(flags, device, change, { arg: '<device>', name: '<name>' }, false);
    });

  withConfigOptions(devices.command('alias'))
    .description('other names people call a device by ("the espresso"); none given: no aliases')
    .argument('<device>', 'the device: its id or its name')
    .argument('[aliases...]', 'the aliases (each in quotes when it has spaces)')
    .option('--json', 'print the device as JSON')
    .action((device: string, aliases: string[], flags: Flags) => changeDevice(flags, device, { aliases }, { arg: '<device>', aliases: '<aliases>' }, false));

  withConfigOptions(devices.command('expose'))
    .description(
      'show a device or one entity to agents (tools, MCP, chat, voice), or not (--off); --reset: the default (settings and diagnostics are not shown)',
    )
    .argument('<target>', 'a device (id or name: all its entities) or an entity id (device.key)')
    .option('--off', 'do not show it to agents')
    .option('--reset', 'back to the default')
    .option('--json', 'print the device as JSON')
    .action(async (target: string, flags: Flags & { off?: boolean; reset?: boolean }) => {
      const change = flags.reset ? { resetExposed: true } : { exposed: !flags.off };
      return changeDevice(flags, target, change, { arg: '<target>' }, true);
    });
}

export function registerAreas(program: Command): void {
  const areas = program
    .command('areas')
    .description("the home's areas (list, add, rename, floor, alias, remove); put a device in one with `hearth devices area`");
  withConfigOptions(areas.command('list', { isDefault: true }))
    .description('list the areas: stored ones and those only a source names')
    .option('--json', 'print the areas as JSON')
    .action(async (flags: Flags) => {
      const { homeAreas } = await deviceMethods();
      const list = await askHearth(flags, 'home.areas', {}, (h) => homeAreas(h), { devices: true });
      if (flags.json) return printJson(list);
      const rows = [['AREA', 'FLOOR', 'DEVICES', 'ALIASES', 'FROM']];
      for (const a of list) rows.push([a.name, a.floor ?? '', String(a.devices), a.aliases.join(', '), a.stored ? 'stored' : 'a source']);
      process.stdout.write(`${list.length} areas\n\n${table(rows)}\n`);
    });
  const run = async (flags: Flags, params: Record<string, unknown>, typed: Record<string, string>) => {
    const { homeArea } = await deviceMethods();
    const answer = await askHearth(flags, 'home.area', params, (h, p) => homeArea(h.home, p as never), { devices: true, typed });
    if (flags.json) return printJson(answer);
    if ('removed' in answer)
      process.stdout.write(
        `removed the area ${answer.removed}; ${answer.devices} device(s) placed there go back to where their source says (else to no area); their names, aliases and exposure stay\n`,
      );
    else
      process.stdout.write(
        `${answer.name}${answer.floor ? ` on ${answer.floor}` : ''}${answer.aliases.length ? `, also called ${answer.aliases.join(', ')}` : ''}: ${answer.devices} device(s)\n`,
      );
  };
  withConfigOptions(areas.command('add'))
    .description('add an area')
    .argument('<name>', 'its name (Living room)')
    .option('--floor <floor>', 'the floor it is on (`hearth floors add` first)')
    .option('--alias <alias>', 'another name for it (repeat for more)', (v: string, a: string[] = []) => [...a, v])
    .option('--json', 'print the area as JSON')
    .action((name: string, flags: Flags & { floor?: string; alias?: string[] }) =>
      run(
        flags,
        { op: 'add', area: name, ...(flags.floor ? { floor: flags.floor } : {}), ...(flags.alias ? { aliases: flags.alias } : {}) },
        { area: '<name>' },
      ),
    );
  withConfigOptions(areas.command('rename'))
    .description('rename an area (its devices stay in it)')
    .argument('<area>', 'the area')
    .argument('<name>', 'its new name')
    .option('--json', 'print the area as JSON')
    .action((area: string, name: string, flags: Flags) => run(flags, { op: 'update', area, name }, { area: '<area>', name: '<name>' }));
  withConfigOptions(areas.command('floor'))
    .description('put an area on a floor; --none: on no floor')
    .argument('<area>', 'the area')
    .argument('[floor]', 'the floor')
    .option('--none', 'on no floor')
    .option('--json', 'print the area as JSON')
    .action((area: string, floor: string | undefined, flags: Flags & { none?: boolean }) => {
      if (!floor && !flags.none) throw new CliFailure('give a floor, or --none');
      return run(flags, { op: 'update', area, ...(flags.none ? { noFloor: true } : { floor }) }, { area: '<area>', floor: '<floor>' });
    });
  withConfigOptions(areas.command('alias'))
    .description('other names of an area ("lounge"); none given: no aliases')
    .argument('<area>', 'the area')
    .argument('[aliases...]', 'the aliases')
    .option('--json', 'print the area as JSON')
    .action((area: string, aliases: string[], flags: Flags) => run(flags, { op: 'update', area, aliases }, { area: '<area>', aliases: '<aliases>' }));
  withConfigOptions(areas.command('remove'))
    .description('remove an area: devices a person put there go back to where their source says')
    .argument('<area>', 'the area')
    .option('--json', 'print the answer as JSON')
    .action((area: string, flags: Flags) => run(flags, { op: 'remove', area }, { area: '<area>' }));
}

export function registerFloors(program: Command): void {
  const floors = program.command('floors').description("the home's floors (list, add, rename, alias, remove); put an area on one with `hearth areas floor`");
  withConfigOptions(floors.command('list', { isDefault: true }))
    .description('list the floors and their areas')
    .option('--json', 'print the floors as JSON')
    .action(async (flags: Flags) => {
      const { homeFloors } = await deviceMethods();
      const list = await askHearth(flags, 'home.floors', {}, (h) => homeFloors(h), { devices: false });
      if (flags.json) return printJson(list);
      const rows = [['FLOOR', 'LEVEL', 'AREAS', 'ALIASES']];
      for (const f of list) rows.push([f.name, f.level === null ? '' : String(f.level), f.areas.join(', '), f.aliases.join(', ')]);
      process.stdout.write(`${list.length} floors\n\n${table(rows)}\n`);
    });
  // `typed`: which of the command's arguments a field the daemon names was (`add`'s name is its <floor>).
  const run = async (flags: Flags, params: Record<string, unknown>, typed: Record<string, string> = { floor: '<floor>' }) => {
    const { homeFloor } = await deviceMethods();
    const answer = await askHearth(flags, 'home.floor', params, (h, p) => homeFloor(h.home, p as never), { devices: false, typed });
    if (flags.json) return printJson(answer);
    if ('removed' in answer) process.stdout.write(`removed the floor ${answer.removed}; ${answer.areas} area(s) were on it and stay, on no floor\n`);
    else
      process.stdout.write(
        `${answer.name}${answer.level !== null ? ` (level ${answer.level})` : ''}${answer.aliases.length ? `, also called ${answer.aliases.join(', ')}` : ''}\n`,
      );
  };
  withConfigOptions(floors.command('add'))
    .description('add a floor')
    .argument('<floor>', 'its name (Upstairs)')
    .option('--level <n>', 'its level: 0 the ground floor, 1 the one above, -1 the cellar')
    .option('--alias <alias>', 'another name for it (repeat for more)', (v: string, a: string[] = []) => [...a, v])
    .option('--json', 'print the floor as JSON')
    .action((floor: string, flags: Flags & { level?: string; alias?: string[] }) => {
      const level = flags.level === undefined ? undefined : Number(flags.level);
      if (level !== undefined && !Number.isInteger(level)) throw new CliFailure(`--level ${JSON.stringify(flags.level)}: a whole number (0 the ground floor)`);
      return run(flags, { op: 'add', floor, ...(level !== undefined ? { level } : {}), ...(flags.alias ? { aliases: flags.alias } : {}) });
    });
  withConfigOptions(floors.command('rename'))
    .description('rename a floor (its areas stay on it)')
    .argument('<floor>', 'the floor')
    .argument('<name>', 'its new name')
    .option('--json', 'print the floor as JSON')
    .action((floor: string, name: string, flags: Flags) => run(flags, { op: 'update', floor, name }, { floor: '<floor>', name: '<name>' }));
  withConfigOptions(floors.command('alias'))
    .description('other names of a floor ("upstairs", "first floor"); none given: no aliases')
    .argument('<floor>', 'the floor')
    .argument('[aliases...]', 'the aliases (each in quotes when it has spaces)')
    .option('--json', 'print the floor as JSON')
    .action((floor: string, aliases: string[], flags: Flags) => run(flags, { op: 'update', floor, aliases }, { floor: '<floor>', aliases: '<aliases>' }));
  withConfigOptions(floors.command('remove'))
    .description('remove a floor (its areas stay, on no floor)')
    .argument('<floor>', 'the floor')
    .option('--json', 'print the answer as JSON')
    .action((floor: string, flags: Flags) => run(flags, { op: 'remove', floor }));
}

export function registerHome(program: Command): void {
  const home = program.command('home').description('the home as a file: export and import floors, areas and what people chose per device');
  withConfigOptions(home.command('export'))
    .description('write floors, areas and every device choice as YAML (to a file, or to stdout)')
    .argument('[file]', 'the file to write (default: stdout)')
    .action(async (file: string | undefined, flags: Flags) => {
      const { homeExport } = await deviceMethods();
      const { text } = await askHearth(flags, 'home.export', {}, (h) => homeExport(h), { devices: true });
      if (file) writeFileSync(file, text);
      else process.stdout.write(text);
    });
  withConfigOptions(home.command('import'))
    .description('read a home file (as `hearth home export` writes it): devices Hearth does not see now are kept for when they come, and named')
    .argument('<file>', 'the YAML file')
    .option('--json', 'print the report as JSON')
    .action(async (file: string, flags: Flags) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new CliFailure(`cannot read ${file}: ${(err as Error).message}`);
      }
      const { homeImport } = await deviceMethods();
      const report = await askHearth(flags, 'home.import', { text }, (h, p) => homeImport(h, p as { text: string }), {
        devices: true,
        typed: { text: '<file>' },
      });
      if (flags.json) return printJson(report);
      const lines = [`imported ${report.floors} floor(s), ${report.areas} area(s), ${report.devices} device(s) from ${file}`];
      if (report.unknown.length)
        lines.push(`${report.unknown.length} device(s) Hearth does not see now (kept; they apply when the device appears): ${report.unknown.join(', ')}`);
      for (const p of report.problems) lines.push(`not imported: ${file}: ${p.path}: ${p.message}`);
      process.stdout.write(`${lines.join('\n')}\n`);
      if (report.problems.length) process.exitCode = 2;
    });
}
