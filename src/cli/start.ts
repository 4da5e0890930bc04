// `hearth start`: the whole bridge, on the embedded default when nothing is configured.
import type { Command } from 'commander';
import { DEMO_DEVICES, demoEnabled } from '../bridge.js';
import { DatabaseError } from '../db/database.js';
import { Hearth } from '../hearth.js';
import { BrokerStartError } from '../mqtt/embedded-broker.js';
import { redact } from '../mqtt/connection.js';
import { configOrExit, loggerFor, withConfigOptions, type CommonFlags } from './options.js';
import { ConfigError } from '../config/load.js';
import { HttpStartError, startHttpServer, type HttpServer } from '../http/server.js';
import { McpHttpHandler } from '../mcp/http.js';
import { formatState, table } from './format.js';
import { relative } from 'node:path';

export function registerStart(program: Command): void {
  withConfigOptions(program.command('start'))
    .description('start the bridge (embedded broker and demo home when no broker is configured)')
    .option('--no-simulator', 'load the demo home but do not simulate it (run `hearth simulate` yourself)')
    .action(async (flags: CommonFlags & { simulator: boolean }) => {
      const loaded = configOrExit(flags);
      const log = loggerFor(loaded);
      let hearth: Hearth;
      try {
        hearth = await Hearth.open({ config: loaded.config, log, embedBroker: true, simulate: flags.simulator, recordHistory: true });
      } catch (err) {
        if (err instanceof BrokerStartError || err instanceof DatabaseError) {
          process.stderr.write(`hearth: ${err.message}\n`);
          process.exit(3);
        }
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
        if (err instanceof ConfigError) {
          await hearth.close();
          process.stderr.write(`hearth: configuration error: ${err.message}\n`);
          process.exit(2);
        }
        if (!(err instanceof HttpStartError)) throw err;
        await hearth.close();
        process.stderr.write(`hearth: ${err.message}\n`);
        process.exit(3);
      }
      const stop = async (signal: string) => {
        log.info({ signal }, 'stopping');
        stopApprovalWatch();
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
      const lines = [
        '',
        `Hearth is running${loaded.file ? ` (config ${where(loaded.file)})` : ''}`,
        `  broker    ${bridge.broker ? `embedded at ${bridge.broker.url}` : redact(bridge.connection.options.url)} (${bridge.connection.state})`,
        `  devices   ${devices.length} devices, ${entities.length} entities from ${bridge.paths.map(where).join(', ') || 'nowhere'}` +
          (bridge.deviceProblems.length ? `; ${bridge.deviceProblems.length} file problem(s) logged above` : '') +
          (watched ? '; reloaded when they change' : ''),
        demoEnabled(loaded.config)
          ? `  demo      ${flags.simulator ? 'simulated devices' : 'devices (not simulated here: run hearth simulate)'} from ${where(DEMO_DEVICES)} publish on hearth-demo/#`
          : '',
        `  state     ${reporting}/${entities.length} entities reporting`,
        `  tools     ${hearth.tools.all().length} host tools (${hearth.tools.shape}): hearth tools`,
        `  http      ${http.url}  (web page and API${loaded.config.http.mcpPath ? `, MCP at ${loaded.config.http.mcpPath}` : ''}; token: hearth token create <name> --role owner)`,
        `  database  ${where(loaded.config.database.path)} (policy, approvals, audit: ${hearth.audit.digest().count} rows` +
          `${recovered.interrupted ? `, ${recovered.interrupted} marked interrupted` : ''}${recovered.chainOk ? ', chain verified' : ', CHAIN BROKEN: hearth audit verify'})`,
        `  try       hearth devices  ·  hearth tools  ·  ${demoEnabled(loaded.config) ? `hearth call living_room_lamp '{"action":"turn_on"}'` : `hearth call <tool> '<json args>'`}  ·  hearth audit tail`,
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
