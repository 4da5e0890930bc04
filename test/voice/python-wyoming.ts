// The real `wyoming` Python package (as Home Assistant drives a Wyoming
// service), for Hearth's Wyoming tests: wyoming_driver.py beside this file
// runs its AsyncTcpClient and event classes; this is the test's handle on it.
// The package is not on any registry these machines reach: it is vendored in
// `../shared/vendor/python` beside the repository (its README says how). Where
// that folder is absent (a clone with nothing beside it) the tests that need it
// skip, saying why. HEARTH_VENDOR_PYTHON points elsewhere (a worktree whose
// `../shared` is not the project's).
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { signalGroup, spawnInGroup } from '../helpers/processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..', '..');
export const VENDOR_PYTHON = process.env.HEARTH_VENDOR_PYTHON ?? resolve(REPO, '..', 'shared', 'vendor', 'python');

/** Why the Python client cannot run here (the tests skip with this), or undefined when it can. */
export function pythonWyomingMissing(): string | undefined {
  if (!existsSync(join(VENDOR_PYTHON, 'wyoming', 'client.py')))
    return `the vendored Python wyoming package is not at ${VENDOR_PYTHON} (../shared beside the repository; set HEARTH_VENDOR_PYTHON to use another)`;
  const probe = spawnSync('python3', ['-c', 'import wyoming.client, wyoming.info, wyoming.handle, wyoming.asr'], {
    env: { ...process.env, PYTHONPATH: VENDOR_PYTHON },
    encoding: 'utf8',
  });
  if (probe.error) return `python3 could not be run: ${probe.error.message}`;
  if (probe.status !== 0) return `python3 could not import the vendored wyoming package: ${probe.stderr.trim().split('\n').at(-1)}`;
  return undefined;
}

export interface WyEvent {
  type: string;
  data: Record<string, any>;
}

type Answer = { id: number; ok: boolean; error?: string; [key: string]: unknown };

export class PythonWyoming {
  private next = 1;
  private readonly waiting = new Map<number, (a: Answer) => void>();
  private stderr = '';
  private names = 0;

  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const answer = JSON.parse(line) as Answer;
      this.waiting.get(answer.id)?.(answer);
      this.waiting.delete(answer.id);
    });
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString('utf8')).slice(-4000);
    });
    child.once('exit', (code) => {
      for (const [id, done] of this.waiting) done({ id, ok: false, error: `the Python driver exited (${code}): ${this.stderr}` });
      this.waiting.clear();
    });
  }

  static async start(): Promise<PythonWyoming> {
    const child = spawnInGroup('python3', [join(HERE, 'wyoming_driver.py')], {
      env: { ...process.env, PYTHONPATH: VENDOR_PYTHON, PYTHONUNBUFFERED: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const driver = new PythonWyoming(child);
    const { version } = await driver.command({ op: 'version' });
    if (version !== '1.9.0') throw new Error(`expected the vendored wyoming 1.9.0, got ${String(version)}`);
    return driver;
  }

  async command(command: Record<string, unknown>): Promise<Answer> {
    const id = this.next++;
    const answer = await new Promise<Answer>((resolve) => {
      this.waiting.set(id, resolve);
      this.child.stdin!.write(`${JSON.stringify({ id, ...command })}\n`);
    });
    if (!answer.ok) throw new Error(`wyoming driver, ${String(command.op)}: ${answer.error}`);
    return answer;
  }

  /** A new connection, through the library's AsyncTcpClient. */
  async connect(port: number): Promise<PythonWyomingClient> {
    const conn = `c${++this.names}`;
    await this.command({ op: 'connect', conn, port });
    return new PythonWyomingClient(this, conn);
  }

  async stop(): Promise<void> {
    this.child.stdin?.end();
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      signalGroup(this.child, 'SIGTERM');
      await exited;
    }
  }
}

export class PythonWyomingClient {
  constructor(
    private readonly driver: PythonWyoming,
    readonly conn: string,
  ) {}

  async describe(): Promise<void> {
    await this.driver.command({ op: 'describe', conn: this.conn });
  }

  async transcript(text: string, context?: Record<string, unknown>): Promise<void> {
    await this.driver.command({ op: 'transcript', conn: this.conn, text, ...(context ? { context } : {}) });
  }

  /** Bytes the library would never write (bad frames). */
  async raw(bytes: string | Buffer): Promise<void> {
    await this.driver.command({ op: 'raw', conn: this.conn, hex: Buffer.from(bytes).toString('hex') });
  }

  /** The next event as the library reads it; 'closed' when the service closed the connection. */
  async read(timeoutSeconds = 20): Promise<WyEvent | 'closed'> {
    const a = await this.driver.command({ op: 'read', conn: this.conn, timeout: timeoutSeconds });
    if (a.timeout) throw new Error(`no event within ${timeoutSeconds} s on ${this.conn}`);
    if (a.closed) return 'closed';
    return a.event as WyEvent;
  }

  /** The next event, which must be one. */
  async event(timeoutSeconds = 20): Promise<WyEvent> {
    const e = await this.read(timeoutSeconds);
    if (e === 'closed') throw new Error(`the service closed ${this.conn} instead of answering`);
    return e;
  }

  async close(): Promise<void> {
    await this.driver.command({ op: 'close', conn: this.conn });
  }
}
