// pino everywhere: JSON lines for machines, pino-pretty for a person at a
// terminal. Logs go to stderr so stdout stays free for command output and for
// stdio protocols (MCP, agent rpc).
import { pino, type Logger, type DestinationStream } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export interface LogOptions {
  level?: string;
  pretty?: 'auto' | boolean;
  /** Where lines go; tests pass a sink. Default: stderr. */
  destination?: DestinationStream;
  /** At a terminal (pretty), errors show their stack only when asked (--verbose); JSON lines always carry it. */
  stacks?: boolean;
}

/** An error as a person at a terminal reads it: its type, message and code, not the stack. */
function shortErr(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  return { type: err.name, message: err.message, ...(code !== undefined ? { code } : {}) };
}

/** Credentials in a URL's authority (`mqtt://user:pass@host`) become `***`. */
export function redactUrl(url: string): string {
  // Up to the LAST '@' of the authority: MQTT.js (url.parse) takes a raw '@' in
  // the password as part of it, so `mqtt://u:p@ss@host` must not leave `ss@` behind.
  return url.replace(/\/\/[^/?#]*@/, '//***@');
}

// Secrets never reach a log line, whoever logs a config, options or headers object (a token's NAME is not
// secret and stays; its secret travels in an authorization header or a `secret` field):
// these keys at the top and up to two levels down are censored, and URLs lose their credentials.
const SECRET_KEYS = ['password', 'apiKey', 'api_key', 'secret', 'authorization', 'cookie', 'credentials', 'accessToken', 'access_token'];
const URL_KEYS = ['url', 'broker', 'baseUrl', 'base_url'];
const deep = (keys: string[]) => keys.flatMap((k) => [k, `*.${k}`, `*.*.${k}`]);
export const REDACT = {
  paths: [...deep(SECRET_KEYS), ...deep(URL_KEYS)],
  censor: (value: unknown, path: string[]) =>
    URL_KEYS.includes(path[path.length - 1]!) ? (typeof value === 'string' ? redactUrl(value) : value) : '[redacted]',
};

export function createLogger(options: LogOptions = {}): Logger {
  const level = options.level ?? 'info';
  if (options.destination) return pino({ level, base: { name: 'hearth' }, redact: REDACT }, options.destination);
  const usePretty = options.pretty === 'auto' || options.pretty === undefined ? process.stderr.isTTY : options.pretty;
  if (usePretty) {
    return pino(
      { level, base: undefined, redact: REDACT, ...(options.stacks ? {} : { serializers: { err: shortErr } }) },
      pretty({ destination: 2, sync: true, colorize: true, singleLine: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' }),
    );
  }
  return pino({ level, base: { name: 'hearth' }, redact: REDACT }, pino.destination({ dest: 2, sync: true }));
}

/** A logger that drops everything, for library use without a host logger. */
export const silentLogger: Logger = pino({ level: 'silent' });
