// How answers read at a terminal: tables, and the state words every door shares (src/present).
export { formatAge, stateWords as formatState } from '../present/state.js';

export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}
