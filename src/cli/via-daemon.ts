// A command asks the running daemon for this database when there is one, and
// builds a Hearth of its own when there is none (saying so, in one line on stderr).
// Either way it prints the same CommandOutput, made by the same function.
import { writeFileSync } from 'node:fs';
import type { ControlClient } from '../daemon/control-client.js';
import type { HomeShape } from '../daemon/methods.js';
import type { CommandOutput } from '../daemon/protocol.js';
import type { CommonFlags } from './options.js';

export type ReachFlags = CommonFlags;

/** Flags that choose a home (devices, broker, demo): given, they must match the daemon's. */
const shapesHome = (f: CommonFlags) => !!(f.devices || f.mqttUrl || f.brokerPort || f.demo !== undefined || f.config || f.set?.length);

/** Why the daemon's home is not the one these flags ask for, or undefined when it is. */
async function otherHome(flags: CommonFlags, theirs: HomeShape): Promise<string | undefined> {
  const { configOrExit } = await import('./options.js');
  const { brokerUrl, demoEnabled, devicePaths } = await import('../bridge.js');
  const { redact } = await import('../mqtt/connection.js');
  const { sectionDigests } = await import('../daemon/methods.js');
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
  try {
    const client = await ControlClient.connect(dbPath);
    if (client && shapesHome(flags)) {
      const hello = await client.call<{ home: HomeShape }>('hello');
      const why = await otherHome(flags, hello.home);
      if (why) {
        client.close();
        process.stderr.write(`hearth: the daemon for ${dbPath} runs another home (${why}); running standalone\n`);
        return undefined;
      }
    }
    if (client) {
      if (flags.verbose) process.stderr.write(`hearth: using the running daemon (${client.address}) for ${dbPath}\n`);
      return client;
    }
    process.stderr.write(`hearth: no daemon running for ${dbPath}; running standalone (start one with \`hearth start\`)\n`);
  } catch (err) {
    if (!(err instanceof EndpointRefused)) throw err;
    process.stderr.write(`hearth: not using the control endpoint: ${err.message}; running standalone\n`);
  }
  return undefined;
}

/** Ask the daemon, or run `standalone`; then print the answer. */
export async function answer(
  dbPath: string,
  flags: ReachFlags,
  method: string,
  params: Record<string, unknown>,
  standalone: () => Promise<CommandOutput>,
  options: { imageOut?: string } = {},
): Promise<CommandOutput> {
  const client = await reachDaemon(dbPath, flags);
  let out: CommandOutput | undefined;
  if (client) {
    const { ControlError, METHOD_NOT_FOUND } = await import('../daemon/protocol.js');
    try {
      out = await client.call<CommandOutput>(method, params);
    } catch (err) {
      // A daemon of an older version: this command runs on its own rather than fail.
      if (!(err instanceof ControlError && err.code === METHOD_NOT_FOUND)) throw err;
      process.stderr.write(`hearth: the running daemon does not answer \`${method}\` (an older version?); running standalone\n`);
    } finally {
      client.close();
    }
  }
  out ??= await standalone();
  print(out, options.imageOut);
  return out;
}

export function print(out: CommandOutput, imageOut?: string): void {
  if (imageOut && out.image) writeFileSync(imageOut, Buffer.from(out.image, 'base64'));
  if (out.stderr) process.stderr.write(out.stderr);
  if (out.stdout) process.stdout.write(out.stdout);
  if (out.exitCode !== undefined) process.exitCode = out.exitCode;
}
