// Hearth logs with pino; inside Node-RED its lines go to Node-RED's log
// (RED.log), tagged [hearth], at the matching level.
import { pino } from 'pino';
import type { Logger } from '../../dist/log.js';
import type { RedLog } from './red.js';

const LEVELS: Record<number, keyof RedLog> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'error' };
const SKIP = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'name']);

export function redLogger(log: RedLog, tag: string, level = 'info'): Logger {
  return pino(
    { level, base: undefined },
    {
      write(line: string) {
        let rec: Record<string, unknown>;
        try {
          rec = JSON.parse(line) as Record<string, unknown>;
        } catch {
          log.info(`[${tag}] ${line.trim()}`);
          return;
        }
        const fields = Object.entries(rec)
          .filter(([k]) => !SKIP.has(k))
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ');
        const method = LEVELS[Number(rec.level)] ?? 'info';
        log[method](`[${tag}] ${String(rec.msg ?? '')}${fields ? ` (${fields})` : ''}`);
      },
    },
  );
}
