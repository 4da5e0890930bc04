// `hearth start`: the whole bridge, on the embedded default when nothing is configured.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DEMO_DEVICES, PACKAGE_ROOT, demoEnabled } from '../bridge.js';
import { DatabaseError } from '../db/database.js';
import { Hearth } from '../hearth.js';
import { describeReach } from '../history/store.js';
import { BrokerStartError } from '../mqtt/embedded-broker.js';
import { redact } from '../mqtt/connection.js';
import { CliFailure } from './failure.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { ConfigError, type LoadedConfig } from '../config/load.js';
import { HttpStartError, startHttpServer, type HttpServer } from '../http/server.js';
import { McpHttpHandler } from '../mcp/http.js';
import { ControlServer, ControlServerError } from '../daemon/control-server.js';
import { endpointFor } from '../daemon/endpoint.js';
import { controlMethods, controlStreams } from '../daemon/methods/index.js';
import { startWyomingFromConfig, type WyomingServer } from '../wyoming/server.js';
import { formatState, table } from './format.js';
import { hearthCommand, plainCommandNote } from './command-name.js';
import { isAbsolute, relative, resolve } from 'node:path';
import { shellWord } from '../util/shell-word.js';

type StartFlags = CommonFlags & { simulator: boolean; httpPort?: string };

/**
 * The flags a client command needs to find this daemon (its database) and, on its
 * own, this broker: so the banner's "try" line works when pasted.
 */
export function clientFlags(loaded: LoadedConfig, flags: StartFlags, cwd = process.cwd()): string {
  const out: string[] = [];
  const where = (p: string) => {
    const rel = relative(cwd, p);
    return rel && !rel.startsWith('..') ? rel : p;
  };
  if (flags.config) out.push('-c', shellWord(where(resolve(cwd, flags.config))));
  else if (loaded.config.database.path !== resolve(cwd, 'hearth.db')) out.push('--db', shellWord(where(loaded.config.database.path)));
  if (!flags.config && !loaded.config.mqtt.url && loaded.config.mqtt.embedded.port !== 1883)
    out.push('--broker-port', String(loaded.config.mqtt.embedded.port));
  if (!flags.config && loaded.config.mqtt.url) out.push('--mqtt-url', shellWord(redact(loaded.config.mqtt.url)));
  return out.length ? ` ${out.join(' ')}` : '';
}

export function registerStart(program: Command): void {
  withConfigOptions(program.command('start'))
    .description('start the bridge (embedded broker and demo home when no broker is configured)')
    .option('--no-simulator', 'load the demo home but do not simulate it (run `hearth simulate` yourself)')
    .option('--http-port <port>', 'port of the web page, API and MCP endpoint (default 8080; 0 picks a free one)')
    .action(async (flags: StartFlags) => {
      const loaded = await configOrExit(flags, flags.httpPort !== undefined ? { 'http.port': flags.httpPort } : {});
      const log = await loggerFor(loaded);
      let hearth: Hearth;
      try {
        hearth = await Hearth.open({ config: loaded.config, log, embedBroker: true, simulate: flags.simulator, recordHistory: true, statusWill: true });
      } catch (err) {
        if (err instanceof BrokerStartError || err instanceof DatabaseError) throw new CliFailure(err.message, 3);
        throw err;
      }
      const bridge = hearth.bridge;
      const recovered = hearth.recoverAudit();
      const watched = loaded.config.devices.watch ? bridge.watchDevices() : 0;
      // Approvals that `hearth call` or a Node-RED runtime ask for reach the page's event stream at once.
      const stopApprovalWatch = hearth.approvals.watchOtherProcesses();
      // Calls of `hearth call` processes that died while this bridge runs are swept too.
      setInterval(() => hearth.sweepPending(), 10_000).unref();
      // The HTTP API (web page, API, MCP): a bad setting or a taken port stops here, like a taken broker port.
      let http: HttpServer;
      try {
        const { mcpPath, ...httpConfig } = loaded.config.http;
        const mcp = new McpHttpHandler({ hearth, log: log.child({ part: 'mcp' }) });
        http = await startHttpServer({
          hearth,
          ...httpConfig,
          log: log.child({ part: 'http' }),
          // MCP over Streamable HTTP, behind the same token and Origin checks as the API.
          mounts: mcpPath ? [{ path: mcpPath, handle: (req, res, principal, token) => mcp.handle(req, res, principal, token), close: () => mcp.close() }] : [],
        });
      } catch (err) {
        if (!(err instanceof ConfigError) && !(err instanceof HttpStartError)) throw err;
        await hearth.close();
        throw err instanceof ConfigError ? new CliFailure(`configuration error: ${err.message}`, 2) : new CliFailure(err.message, 3);
      }
      // The control endpoint: `hearth devices`, `call`, `mcp`... ask this process instead of building their own.
      let control: ControlServer | undefined;
      const pkg = JSON.parse(readFileSync(`${PACKAGE_ROOT}/package.json`, 'utf8')) as { version: string };
      const endpoint = endpointFor(loaded.config.database.path);
      if (endpoint) {
        try {
          control = await ControlServer.start({
            endpoint,
            methods: controlMethods(hearth, pkg),
            streams: controlStreams(hearth, log.child({ part: 'control' })),
            log: log.child({ part: 'control' }),
          });
          log.info({ address: control.address }, 'control endpoint listening');
        } catch (err) {
          if (err instanceof ControlServerError) {
            await http.close();
            await hearth.close();
            throw new CliFailure(err.message, 3);
          }
          log.warn({ err }, 'control endpoint not started: commands will run on their own');
        }
      }
      // Said where this user's commands look, so one run from any folder finds this home (src/daemon/running.ts).
      const { announceDaemon } = await import('../daemon/running.js');
      const unannounce = announceDaemon({ db: loaded.config.database.path, broker: redact(bridge.connection.options.url), http: http.url });
      process.once('exit', unannounce);
      // And on the broker, for Hearth processes of other users and machines (src/mqtt/daemon-status.ts).
      await bridge.setStatus({ control: control?.address ?? null, http: http.url ?? null, version: pkg.version });
      // The Wyoming conversation service for voice satellites, when wyoming.port is set.
      let wyoming: WyomingServer | undefined;
      try {
        wyoming = await startWyomingFromConfig(hearth, loaded.config, log.child({ part: 'wyoming' }));
      } catch (err) {
        await http.close();
        await hearth.close();
        await control?.close();
        throw err instanceof ConfigError ? new CliFailure(`configuration error: ${err.message}`, 2) : new CliFailure((err as Error).message, 3);
      }
      const stop = async (signal: string) => {
        log.info({ signal }, 'stopping');
        stopApprovalWatch();
        unannounce();
        await control?.close();
        await wyoming?.close();
        await http.close();
        await hearth.close();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop('SIGINT'));
      process.once('SIGTERM', () => void stop('SIGTERM'));

      const devices = bridge.registry.devices();
      const entities = bridge.registry.entities();
      const reporting = await bridge.settle(4000);
      const where = (p: string) => {
        const rel = relative(process.cwd(), p);
        return rel && !rel.startsWith('..') ? rel : p;
      };
      const cmd = hearthCommand();
      const f = clientFlags(loaded, flags);
      const lines = [
        '',
        `Hearth is running${loaded.file ? ` (config ${where(loaded.file)})` : ''}`,
        `  broker    ${bridge.broker ? `embedded at ${bridge.broker.url}` : redact(bridge.connection.options.url)} (${bridge.connection.state})`,
        `  devices   ${devices.length} devices, ${entities.length} entities from ${[...bridge.paths.map(where), ...discoveredFrom(devices)].join(', ') || 'nowhere'}` +
          (bridge.deviceProblems.length ? `; ${bridge.deviceProblems.length} file problem(s) logged above` : '') +
          (watched ? '; reloaded when they change' : ''),
        demoEnabled(loaded.config)
          ? `  demo      ${flags.simulator ? 'simulated devices' : `devices (not simulated here: run ${cmd} simulate)`} from ${where(DEMO_DEVICES)} publish on hearth-demo/#`
          : '',
        `  state     ${reporting}/${entities.length} entities reporting`,
        ...firstHourLines(hearth, cmd, f),
        `  tools     ${hearth.tools.all().length} host tools (${hearth.tools.shape}): ${cmd} tools${f}`,
        `  http      ${http.url}  (web page and API${loaded.config.http.mcpPath ? `, MCP at ${loaded.config.http.mcpPath}` : ''}; token: ${cmd} token create <name> --role owner${f})`,
        wyoming
          ? `  wyoming   ${wyoming.host}:${wyoming.port} (voice satellites: ${loaded.config.wyoming.satellites.map((s) => `voice:${s.name}`).join(', ') || 'none configured'})`
          : '',
        `  database  ${where(loaded.config.database.path)} (policy, approvals, audit: ${hearth.audit.digest().count} rows` +
          `${recovered.interrupted ? `, ${recovered.interrupted} marked interrupted` : ''}${auditWords(recovered, `${cmd} audit verify${f}`)})`,
        `  history   ${describeReach(hearth.history.reach())}`,
        `  control   ${control ? `${control.address} (${cmd} devices, tools, call, chat, mcp, ... ask this process)` : 'none: commands run on their own'}`,
        tryLine(f, demoEnabled(loaded.config), cmd),
        '',
      ].filter((l) => l !== '');
      const rows = [['ENTITY', 'KIND', 'AREA', 'STATE']];
      for (const e of entities) rows.push([e.id, e.kind, e.area ?? '', formatState(e, bridge.cache.get(e.id))]);
      process.stdout.write(`${lines.join('\n')}\n\n${table(rows)}\n\nPress Ctrl+C to stop.\n`);
      bridge.cache.on('change', (state, entity) => {
        log.debug({ entity: entity.id, value: state.value, attributes: state.attributes, available: state.available }, 'state');
      });
    });
}

/**
 * What an owner still has to do in a real home, with the commands that do it (run as printed): let owners act
 * when no rule lets them use any actuator, and place the devices that have no area.
 */
export function firstHourLines(hearth: Hearth, cmd: string, f: string): string[] {
  const lines: string[] = [];
  const owner = { id: 'cli:owner', roles: ['owner'] };
  const actuators = hearth.tools.all().filter((t) => t.capability === 'actuator' && !t.meta.group);
  if (actuators.length && !hearth.tools.forPrincipal(owner).some((t) => t.capability === 'actuator')) {
    lines.push(
      `  policy    no rule lets anyone act yet (actuators are denied until one does); let owners act:`,
      `            ${cmd} policy allow role:owner --capability actuator --action actuate${f}`,
    );
  }
  const devices = hearth.bridge.registry.devices();
  const placeless = devices.filter((d) => !d.area);
  if (placeless.length) {
    const suggested = placeless.filter((d) => d.suggestedArea);
    lines.push(
      `  areas     ${placeless.length} of ${devices.length} devices have no area${suggested.length ? ` (${suggested.length} with a suggestion)` : ''}: ${cmd} devices area${f} <device> <area>  ·  ${cmd} areas${f}`,
    );
  }
  return lines;
}

/** The banner's word on the audit: verified only when the chain holds and a signed digest vouches for every entry. */
function auditWords(r: { chainOk: boolean; unvouched?: { from: number; to: number; count: number } }, verify: string): string {
  if (!r.chainOk) return `, CHAIN BROKEN: ${verify}`;
  if (r.unvouched)
    return `, ${r.unvouched.count} ${r.unvouched.count === 1 ? 'entry' : 'entries'} (ids ${r.unvouched.from}..${r.unvouched.to}) NOT vouched for by a signed digest: ${verify}`;
  return ', chain verified';
}

function tryLine(f: string, demo: boolean, cmd: string): string {
  const lines = [
    `  try       ${cmd} devices${f}  ·  ${cmd} tools${f}  ·  ${demo ? `${cmd} call${f} living_room_lamp '{"action":"turn_on"}'` : `${cmd} call${f} <tool> '<json args>'`}  ·  ${cmd} audit tail${f}`,
  ];
  const note = plainCommandNote(cmd);
  if (note) lines.push(`            (${note})`);
  return lines.join('\n');
}

/** The discovery sources devices came from ("zigbee2mqtt discovery"); a device file's devices name their file (a path) instead. */
function discoveredFrom(devices: Array<{ source: string }>): string[] {
  const sources = new Set(devices.map((d) => d.source).filter((s) => !isAbsolute(s)));
  return [...sources].sort().map((s) => (s.includes('discovery') ? s : `${s} discovery`));
}
