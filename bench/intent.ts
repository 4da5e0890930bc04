// Benchmark: the offline intent model in a 1,000-entity home (the generated
// home of test/helpers/big-home.ts, its rooms repeated with numbered areas):
// time per utterance (p50, p99) over a mix of commands, questions, typos and
// sentences it does not understand; and the one-off costs (compiling the
// shipped sentences, building the home's vocabulary).
//
// Baseline, measured in the same run: a plain regex scan of the same
// utterances over the same names (one precompiled /\bname\b/i per entity and
// alias, every one tried), the least any name lookup can cost without an index.
//
// A script, not a test: it prints numbers and ratios and writes
// bench/results/intent.json; it never fails on timings.
// Knobs: BENCH_INTENT_ENTITIES (1000), BENCH_INTENT_ROUNDS (20).
import { IntentProvider } from '../src/agent/providers/intent/provider.js';
import { SentenceSet } from '../src/agent/providers/intent/sentence-set.js';
import { generateTools, toolSpecs } from '../src/tools/generator.js';
import { generatedHomeOf } from '../test/helpers/big-home.js';
import { envInt, fmt, machine, nowNs, ratio, summarize, table, writeResults } from './lib/harness.js';

const N = envInt('BENCH_INTENT_ENTITIES', 1000);
const ROUNDS = envInt('BENCH_INTENT_ROUNDS', 20);
const startedAt = new Date().toISOString();

const UTTERANCES = [
  'turn on the kitchen ceiling light',
  'turn off the lights in the living room 3',
  'desk lamp 7 30%',
  'bedroom lamp 2 to the max',
  'upstairs lights off',
  'set the office thermostat 4 to 21',
  'make it warmer in the living room',
  'close all the blinds upstairs',
  'open the garage door 5',
  'start the living room ceiling fan 2',
  'office fan 3 to 30 percent',
  'shut the kitchen water valve',
  'lock the front door lock 6',
  'is the front door lock locked',
  'what lights are on in the kitchen 8',
  'how many locks are unlocked',
  'is anyone in the office 2',
  'what is the temperature in the bedroom 9',
  'who is at the front door',
  'turn on the hall light and the porch light',
  'trun on the bedside lamp',
  'turn on the bedsde lamp 4',
  'turn on the jacuzzi',
  'bake me a cake',
  'what is going on at home',
];

function ms(t0: bigint): number {
  return Number(nowNs() - t0) / 1e6;
}

const entities = generatedHomeOf(N);
const { tools } = generateTools(entities, { shape: 'grouped', groupAbove: 40 }, async () => ({}));
const names = toolSpecs(tools).map((s) => s.function.name);
console.log(
  `intent: Node ${process.version}, ${machine().cpus} cores; a home of ${entities.length.toLocaleString('en-US')} entities; ${UTTERANCES.length} utterances x ${ROUNDS} rounds\n`,
);

// One-off costs.
let t = nowNs();
const sentences = new SentenceSet();
const compileMs = ms(t);
const provider = new IntentProvider({ entities: () => entities, tools: () => tools, sentences });
t = nowNs();
provider.understand('turn on the kitchen ceiling light', names);
const firstMs = ms(t);

// The baseline: every name and alias as its own regular expression, all tried per utterance.
const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const patterns = entities.flatMap((e) => [e.name, ...e.aliases].map((n) => ({ id: e.id, re: new RegExp(`\\b${escapeRe(n)}\\b`, 'i') })));
function regexScan(text: string): string[] {
  const hits: string[] = [];
  for (const p of patterns) if (p.re.test(text)) hits.push(p.id);
  return hits;
}

// Warm up both, then interleave them so both see the same machine.
for (let i = 0; i < 3; i++)
  for (const u of UTTERANCES) {
    provider.understand(u, names);
    regexScan(u);
  }
const model: number[] = [];
const regex: number[] = [];
const perUtterance = new Map<string, number[]>();
let understood = 0;
for (let r = 0; r < ROUNDS; r++) {
  for (const u of UTTERANCES) {
    let a = nowNs();
    const out = provider.understand(u, names);
    const m = ms(a);
    model.push(m);
    (perUtterance.get(u) ?? perUtterance.set(u, []).get(u)!).push(m);
    if (r === 0 && out.calls.length) understood++;
    a = nowNs();
    regexScan(u);
    regex.push(ms(a));
  }
}

const sm = summarize(model);
const sr = summarize(regex);
table(
  ['per utterance (ms)', 'p50', 'p90', 'p99', 'max', 'mean'],
  [
    ['intent model', fmt(sm.p50, 3), fmt(sm.p90, 3), fmt(sm.p99, 3), fmt(sm.max, 3), fmt(sm.mean, 3)],
    ['regex scan (baseline)', fmt(sr.p50, 3), fmt(sr.p90, 3), fmt(sr.p99, 3), fmt(sr.max, 3), fmt(sr.mean, 3)],
    ['ratio', ratio(sm.p50, sr.p50), ratio(sm.p90, sr.p90), ratio(sm.p99, sr.p99), ratio(sm.max, sr.max), ratio(sm.mean, sr.mean)],
  ],
);
console.log('');
const slowest = [...perUtterance]
  .map(([u, xs]) => [u, summarize(xs).p50] as const)
  .sort((a, b) => b[1] - a[1])
  .slice(0, 5);
table(
  ['slowest utterances', 'p50 ms'],
  slowest.map(([u, p]) => [u, fmt(p, 3)]),
);
console.log(`\n  compile the shipped sentences: ${fmt(compileMs, 1)} ms (once per process); first utterance (builds the vocabulary): ${fmt(firstMs, 1)} ms`);
console.log(`  ${understood} of ${UTTERANCES.length} utterances gave tool calls (the rest are questions back, refusals or not understood)`);

const file = writeResults('intent', {
  startedAt,
  machine: machine(),
  entities: entities.length,
  utterances: UTTERANCES.length,
  rounds: ROUNDS,
  compileMs,
  firstUtteranceMs: firstMs,
  model: sm,
  regexBaseline: sr,
  ratioP50: sm.p50 / sr.p50,
  ratioP99: sm.p99 / sr.p99,
  slowest: Object.fromEntries(slowest),
});
console.log(`\n  results: ${file}`);
