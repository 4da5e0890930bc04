// A command asks the running daemon for this database when there is one, and
// builds a Hearth of its own when there is none (saying so, in one line on stderr).
// Either way it prints the same CommandOutput, made by the same function.
import { writeFileSync } from 'node:fs';
import type { ControlClient } from '../daemon/control-client.js';
import type { CommandOutput } from '../daemon/protocol.js';

export interface ReachFlags {
  verbose?: boolean;
  standalone?: boolean;
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
  let out: CommandOutput;
  if (client) {
    try {
      out = await client.call<CommandOutput>(method, params);
    } finally {
      client.close();
    }
  } else {
    out = await standalone();
  }
  print(out, options.imageOut);
  return out;
}

export function print(out: CommandOutput, imageOut?: string): void {
  if (imageOut && out.image) writeFileSync(imageOut, Buffer.from(out.image, 'base64'));
  if (out.stderr) process.stderr.write(out.stderr);
  if (out.stdout) process.stdout.write(out.stdout);
  if (out.exitCode !== undefined) process.exitCode = out.exitCode;
}
