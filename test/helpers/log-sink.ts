// A pino logger whose lines a test can read back.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export function logSink(level = 'debug'): { log: Logger; lines: LogLine[]; find(re: RegExp): LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const log = createLogger({ level, destination: stream });
  return { log, lines, find: (re) => lines.filter((l) => re.test(l.msg)) };
}
