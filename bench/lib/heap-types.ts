// Sums a V8 heap snapshot's self sizes by type (constructor name, or the
// node type for strings, code, arrays...): where a process's heap goes.
//   node --import tsx bench/lib/heap-types.ts file.heapsnapshot [top=30]
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

export function heapByType(file: string): Array<{ type: string; count: number; bytes: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const f = s.snapshot.meta.node_fields;
  const width = f.length;
  const [iType, iName, iSize] = [f.indexOf('type'), f.indexOf('name'), f.indexOf('self_size')];
  const types = s.snapshot.meta.node_types[0];
  const sums = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + iType]!]!;
    // Objects by constructor; strings, code, arrays and the rest by their node type.
    const key =
      type === 'object' || type === 'closure'
        ? `${type} ${s.strings[s.nodes[i + iName]!]}`
        : type === 'native'
          ? `native ${s.strings[s.nodes[i + iName]!]}`
          : type;
    const e = sums.get(key) ?? { count: 0, bytes: 0 };
    e.count++;
    e.bytes += s.nodes[i + iSize]!;
    sums.set(key, e);
  }
  return [...sums].map(([type, v]) => ({ type, ...v })).sort((a, b) => b.bytes - a.bytes);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const top = Number(process.argv[3] ?? 30);
  const rows = heapByType(process.argv[2]!);
  const total = rows.reduce((a, r) => a + r.bytes, 0);
  console.log(`total ${(total / 1048576).toFixed(1)} MiB`);
  for (const r of rows.slice(0, top)) console.log(`${(r.bytes / 1048576).toFixed(2).padStart(8)} MiB ${String(r.count).padStart(9)}  ${r.type}`);
}
