// `hearth agent rpc` (the built dist) as a child process in a group of its own (processes.ts), spoken to in
// JSON-RPC lines on its stdin and stdout.
import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { HEARTH } from './cli.js';
import { signalGroup, spawnInGroup } from './processes.js';
import { waitFor } from './wait.js';

type Msg = Record<string, any>;

export interface AgentRpcArgs {
  mqttUrl: string;
  /** A folder of device files (the demo is off). */
  devices: string;
  db: string;
  /** `--set key=value` for each. */
  settings?: Record<string, string>;
}

/** The arguments of `node <HEARTH> agent rpc ...` for a runtime on this broker, device folder and database. */
export function agentRpcArgs(o: AgentRpcArgs): string[] {
  const sets = Object.entries(o.settings ?? {}).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
  return [HEARTH, 'agent', 'rpc', '--mqtt-url', o.mqttUrl, '--no-demo', '--devices', o.devices, '--db', o.db, ...sets, '--log-level', 'warn'];
}

/** The settings that point the runtime's builtin engine at a fake OpenAI-compatible model. */
export function openAiModel(url: string, model = 'test'): Record<string, string> {
  return { 'agent.provider': 'openai', 'agent.model': model, 'agent.baseUrl': url };
}

export interface RpcProcess {
  child: ChildProcessWithoutNullStreams;
  /** Every line it wrote on stdout, parsed, in order. */
  lines: Msg[];
  exited: Promise<number | null>;
  send(msg: unknown): void;
  writeRaw(text: string | Buffer): Promise<void>;
  /** The first line `probe` accepts; the failure names `what` and the end of stderr. */
  wait(what: string, probe: (m: Msg) => boolean, timeoutMs?: number): Promise<Msg>;
  /** The end of what it wrote on stderr. */
  stderr(): string;
  /** SIGKILL to its group. */
  kill(): void;
}

export interface RpcProcessOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Fail on any stdout line that is not a JSON-RPC 2.0 message (stdout carries the protocol only). */
  protocolOnly?: boolean;
  /** The default deadline of wait(). */
  waitMs?: number;
}

/** Spawns `node ...args` (see agentRpcArgs) and reads its stdout as JSON lines. */
export function startRpcProcess(args: string[], options: RpcProcessOptions = {}): RpcProcess {
  const child = spawnInGroup(process.execPath, args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, HEARTH_LOG_PRETTY: 'false', ...options.env },
    cwd: options.cwd,
  }) as ChildProcessWithoutNullStreams;
  const lines: Msg[] = [];
  let buf = '';
  let err = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    buf += d;
    let nl: number;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const msg = JSON.parse(line) as Msg;
      if (options.protocolOnly) assert.equal(msg.jsonrpc, '2.0', line);
      lines.push(msg);
    }
  });
  child.stderr.on('data', (d) => (err = (err + String(d)).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    send: (msg) => child.stdin.write(`${JSON.stringify(msg)}\n`),
    writeRaw: (text) => new Promise((resolve) => child.stdin.write(text, () => resolve())),
    wait: (what, probe, timeoutMs = options.waitMs ?? 20_000) => waitFor(`${what}\nstderr: ${err.slice(-1500)}`, () => lines.find(probe), timeoutMs),
    stderr: () => err,
    kill: () => signalGroup(child, 'SIGKILL'),
  };
}
