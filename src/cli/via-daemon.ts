// A command asks the running daemon for this database when there is one, and otherwise runs the same method on a
// home of its own (saying so, in one line on stderr). Either way it gets the method's answer, as data, checked
// against the same schema; the command then prints it (as text, or as it is with --json).
import type { ControlClient } from '../daemon/control-client.js';
import type { Answers, HomeShape, MethodName } from '../daemon/schema.js';
import type { Hearth } from '../hearth.js';
import { hearthCommand } from './command-name.js';
import { CliFailure } from './failure.js';
import type { CommonFlags } from './options.js';

export type ReachFlags = CommonFlags;

/** Flags that choose a home (devices, broker, demo): given, they must match the daemon's. */
const shapesHome = (f: CommonFlags) => !!(f.devices || f.mqttUrl || f.brokerPort || f.demo !== undefined || f.config || f.set?.length);

/** Why the daemon's home is not the one these flags ask for, or undefined when it is. */
async function otherHome(flags: CommonFlags, theirs: HomeShape): Promise<string | undefined> {
  const { configOrExit } = await import('./options.js');
  const { brokerUrl, demoEnabled, devicePaths } = await import('../bridge.js');
  const { redact } = await import('../mqtt/connection.js');
  const { sectionDigests } = await import('../daemon/home.js');
  const { config } = await configOrExit(flags);
  const mine: HomeShape = {
    devices: devicePaths(config, process.cwd()),
    broker: redact(brokerUrl(config)),
    demo: demoEnabled(config),
    sections: sectionDigests(config),
  };
  // Only what the flags asked for is compared (a config file or --set may ask for anything).
  const all = !!(flags.config || flags.set?.length);
  if ((all || flags.mqttUrl || flags.brokerPort) && mine.broker !== theirs.broker) return `its broker is ${theirs.broker}, not ${mine.broker}`;
  if ((all || flags.demo !== undefined) && mine.demo !== theirs.demo) return `its demo home is ${theirs.demo ? 'on' : 'off'}`;
  if ((all || flags.devices) && JSON.stringify(mine.devices) !== JSON.stringify(theirs.devices)) {
    return `it reads devices from ${theirs.devices.join(', ') || 'no files'}, not ${mine.devices.join(', ') || 'no files'}`;
  }
  if (all) {
    const differ = Object.keys(mine.sections).filter((k) => mine.sections[k] !== theirs.sections?.[k]);
    if (differ.length) return `its ${differ.join(', ')} settings differ from these`;
  }
  return undefined;
}

/** The daemon's client, or undefined after saying why the command runs on its own. */
export async function reachDaemon(dbPath: string, flags: ReachFlags): Promise<ControlClient | undefined> {
  if (flags.standalone) {
    if (flags.verbose) process.stderr.write(`hearth: running standalone (--standalone), not asking a daemon for ${dbPath}\n`);
    return undefined;
  }
  const { ControlClient, EndpointRefused } = await import('../daemon/control-client.js');
  const { PROTOCOL_VERSION } = await import('../daemon/protocol.js');
  try {
    const client = await ControlClient.connect(dbPath);
    if (client) {
      const hello = await client.call<Answers['hello']>('hello');
      if (hello.protocol !== PROTOCOL_VERSION) {
        client.close();
        throw new CliFailure(
          `the daemon for ${dbPath} (pid ${hello.pid}, version ${hello.version}) speaks control protocol ${hello.protocol ?? 1}, this hearth speaks ${PROTOCOL_VERSION}: restart it with this version (\`${hearthCommand()} start\`)`,
          1,
        );
      }
      const why = shapesHome(flags) ? await otherHome(flags, hello.home) : undefined;
      if (why) {
        client.close();
        process.stderr.write(`hearth: the daemon for ${dbPath} runs another home (${why}); running standalone\n`);
        return undefined;
      }
      if (flags.verbose) process.stderr.write(`hearth: using the running daemon (${client.address}) for ${dbPath}\n`);
      return client;
    }
    process.stderr.write(`hearth: no daemon running for ${dbPath}; running standalone (start one with \`${hearthCommand()} start\`)\n`);
  } catch (err) {
    if (!(err instanceof EndpointRefused)) throw err;
    process.stderr.write(`hearth: not using the control endpoint: ${err.message}; running standalone\n`);
  }
  return undefined;
}

const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * A method's error as the command line says it: bad input exits 2, anything else 1. A method names the param
 * that was wrong (`window "25:00": ...`); a person is told the flag or argument they typed.
 */
async function asFailure(err: unknown, names: Record<string, string>): Promise<unknown> {
  const { ControlError, INVALID_PARAMS } = await import('../daemon/protocol.js');
  if (!(err instanceof ControlError)) return err;
  let message = err.message;
  const m = /^(?:[\w.]+: (?=param "))?(?:param "(\w+)"|(\w+))(?= |:)/.exec(message);
  const param = m?.[1] ?? m?.[2];
  if (param && names[param]) message = `${names[param]}${message.slice(m![0].length)}`;
  return new CliFailure(message, err.code === INVALID_PARAMS ? 2 : 1, err.code);
}

/**
 * Ask the daemon, or run `standalone` on a home of the command's own, with the same checked params; the
 * method's answer either way. A method's error is a CliFailure (one line, its exit code).
 */
export async function ask<M extends MethodName>(
  dbPath: string,
  flags: ReachFlags,
  method: M,
  params: Record<string, unknown>,
  standalone: (params: Record<string, unknown>) => Promise<Answers[M]> | Answers[M],
  /** How the params were typed, where not as `--<param>`: `{ id: '<id>' }`. */
  typed: Record<string, string> = {},
): Promise<Answers[M]> {
  const names = { ...Object.fromEntries(Object.keys(params).map((k) => [k, `--${kebab(k)}`])), ...typed };
  const client = await reachDaemon(dbPath, flags);
  try {
    if (client) return await client.call<Answers[M]>(method, params);
    const { checkParams } = await import('../daemon/schema.js');
    return await standalone(checkParams(method, params));
  } catch (err) {
    throw await asFailure(err, names);
  } finally {
    client?.close();
  }
}

/**
 * `ask`, where the standalone answer comes from a Hearth the command opens on its own: without the broker (rules,
 * tools and the home's records need none), or, with `devices`, connected (announcing nothing) until the discovered
 * devices have come, so that they can be found by name.
 */
export async function askHearth<M extends MethodName>(
  flags: ReachFlags,
  method: M,
  params: Record<string, unknown>,
  run: (hearth: Hearth, p: Record<string, unknown>) => Answers[M],
  options: { devices?: boolean; typed?: Record<string, string> } = {},
): Promise<Answers[M]> {
  const { configOrExit, databasePathOrExit, loggerFor } = await import('./options.js');
  return ask(
    await databasePathOrExit(flags),
    flags,
    method,
    params,
    async (p) => {
      const loaded = await configOrExit(flags);
      const log = await loggerFor(loaded, flags.logLevel ?? 'warn');
      const { Hearth } = await import('../hearth.js');
      const devices = options.devices ?? false;
      const hearth = await Hearth.open({ config: loaded.config, log, connect: devices, announce: false, connectWaitMs: 5000 });
      try {
        if (devices && hearth.bridge.connection.connected) await hearth.bridge.settle(3000, { quietMs: 500 });
        return run(hearth, p);
      } finally {
        await hearth.close();
      }
    },
    options.typed ?? {},
  );
}

/** `--json`: the answer as it is. */
export function printJson(answer: unknown): void {
  process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
}
