// Benchmark: how long a hostile Home Assistant template can hold the event
// loop now that every render has a step, size and work budget (issue 15,
// finding 7: before, a discovery template blocked it for 7.7 s and took 3.9 GB).
// Each adversarial template is rendered against a 200 KB payload and a
// 20,000-item value_json; the time until it renders or fails is put against a
// baseline measured in the same run: JSON.parse of that same payload, which
// every state message of that size costs anyway.
//
// A script, not a test: it prints numbers and ratios and writes
// bench/results/template-budget.json; it never fails on timings.
// Knob: BENCH_TEMPLATE_REPEAT (5).
import { compileTemplate } from '../src/devices/discovery/homeassistant/templates.js';
import { envInt, fmt, machine, median, nowNs, ratio, secondsSince, table, writeResults } from './lib/harness.js';

const REPEAT = envInt('BENCH_TEMPLATE_REPEAT', 5);
const value = 'ab'.repeat(100_000);
const list = Array.from({ length: 20_000 }, (_, i) => ({ a: i, b: [i, i] }));
const payload = JSON.stringify(list);

const TEMPLATES: Record<string, string> = {
  'doubling with ~': '{% set s = value %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s | length }}',
  'doubling with +': '{% set s = value %}{% for i in range(40) %}{% set s = s + s %}{% endfor %}{{ s | length }}',
  'replace growth': "{{ value | replace('a', value) | length }}",
  'join of copies': "{{ ([value] * 60000) | join('') | length }}",
  'tojson of copies': '{{ ([value] * 60000) | tojson | length }}',
  'replace in a loop': "{% for i in range(10000) %}{% set x = value | replace('a', 'b') %}{% endfor %}x",
  'nested empty loops': '{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}x',
  'unique of a long list': '{% set l = range(10000) | list %}{{ (l + l + l) | unique | length }}',
  'sort in a loop': '{% set l = range(10000) | list %}{% for i in range(100) %}{% set x = l | sort %}{% endfor %}x',
  'deep equality in a loop': '{% for i in range(1000) %}{% set x = value_json == value_json %}{% endfor %}x',
  'normal: a path': '{{ value_json[5].a }}',
  'normal: value length': '{{ value | length }}',
};

/** Milliseconds of one call, median of REPEAT (after one warm-up). */
function time(fn: () => void): number {
  fn();
  const samples: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = nowNs();
    fn();
    samples.push(secondsSince(t0) * 1000);
  }
  return median(samples);
}

console.log(`template-budget: Node ${process.version}, ${machine().cpus} cores; median of ${REPEAT} renders each\n`);
const baseline = time(() => JSON.parse(payload));
const rows: string[][] = [];
const results: Array<{ template: string; ms: number; outcome: string }> = [];
for (const [name, source] of Object.entries(TEMPLATES)) {
  const compiled = compileTemplate(source);
  let outcome = '';
  const ms = time(() => {
    try {
      outcome = `rendered ${JSON.stringify(compiled.render({ value, value_json: list }).slice(0, 12))}`;
    } catch (err) {
      outcome = `refused: ${(err as Error).message.slice(0, 60)}`;
    }
  });
  rows.push([name, fmt(ms, 2), ratio(ms, baseline), outcome]);
  results.push({ template: name, ms, outcome });
}
table(['template', 'ms', `vs JSON.parse of ${Math.round(payload.length / 1024)} KB (${fmt(baseline, 2)} ms)`, 'outcome'], rows);
const file = writeResults('template-budget', { machine: machine(), repeat: REPEAT, baselineMs: baseline, results });
console.log(`\nwrote ${file}`);
