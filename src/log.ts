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
}

export function createLogger(options: LogOptions = {}): Logger {
  const level = options.level ?? 'info';
  if (options.destination) return pino({ level, base: { name: 'hearth' } }, options.destination);
  const usePretty = options.pretty === 'auto' || options.pretty === undefined ? process.stderr.isTTY : options.pretty;
  if (usePretty) {
    return pino(
      { level, base: undefined },
      pretty({ destination: 2, sync: true, colorize: true, singleLine: true, translateTime: 'HH:MM:ss.l', ignore: 'pid,hostname' }),
    );
  }
  return pino({ level, base: { name: 'hearth' } }, pino.destination({ dest: 2, sync: true }));
}

/** A logger that drops everything, for library use without a host logger. */
export const silentLogger: Logger = pino({ level: 'silent' });
