// The offline model measured on its corpus: every sentence in
// test/fixtures/utterances/*.yaml, on the demo home or the larger generated
// home, must produce exactly the tool calls written next to it (grouped tool
// shape, so calls name their entities), or a reply matching the one written.
// Accuracy is reported per intent; the corpus must pass whole. A second test
// holds every sentence to acting only on entities its expectation names.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import type { PreviousTurn } from '../../src/agent/providers/intent/interpret.js';
import { IntentProvider } from '../../src/agent/providers/intent/provider.js';
import { loadDeviceFiles } from '../../src/devices/loader.js';
import type { Entity } from '../../src/devices/model.js';
import type { EntityState } from '../../src/devices/state-cache.js';
import { selectGroup } from '../../src/tools/group-call.js';
import { generateTools, toolSpecs } from '../../src/tools/generator.js';
import { demoExtras, generatedHome } from '../helpers/big-home.js';
import { newKindsExtras } from '../helpers/new-kinds-home.js';

const DIR = new URL('../fixtures/utterances/', import.meta.url).pathname;

interface Entry {
  say: string;
  intent?: string;
  /** `<entity> <action> [k=v...]`, `group <action> [k=v...]`, `read <entity>`, `area <Area>`, `home`, `camera <entity>`, `history <entity> [k=v|k=~...]` (`~`: any time),
   * `audit [<entity>] [k=v|k=~...]`, `policy <entity> action=<action> [for=<who>]`. */
  calls?: string[];
  /** A regular expression the reply must match (and no call is made). */
  reply?: string;
  /** The area the session speaks from. */
  area?: string;
  /** What was said before in the same session ("turn on the kitchen light", then "make it blue"). */
  after?: string[];
  /** Tools the session is not offered (a guest is not offered get_audit). */
  without?: string[];
}

interface Corpus {
  /**
   * demo-plus: the demo home with one ceiling fan and one water valve (test/helpers/big-home.ts); any other
   * name is a device file under test/fixtures/homes/.
   */
  home: string;
  states?: Record<string, { value?: string | number; attributes?: Record<string, string | number> }>;
  utterances: Entry[];
}

function homeOf(name: Corpus['home']): Entity[] {
  if (name === 'generated') return generatedHome();
  if (name !== 'demo' && name !== 'demo-plus' && name !== 'demo-kinds')
    return loadDeviceFiles([new URL(`../fixtures/homes/${name}.yaml`, import.meta.url).pathname]).devices.flatMap((d) => d.entities);
  const demo = loadDeviceFiles([new URL('../../devices/demo', import.meta.url).pathname]).devices.flatMap((d) => d.entities);
  // demo-kinds: the demo home with a scene, a mower, a humidifier, a water heater and a tracker (#31).
  if (name === 'demo-kinds') return [...demo, ...newKindsExtras()];
  return name === 'demo-plus' ? [...demo, ...demoExtras()] : demo;
}

const value = (v: string): unknown => (/^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v);

/** A written call -> [tool, args] on the grouped tools of this home. */
function expected(spec: string, entities: Map<string, Entity>, tools: ReturnType<typeof generateTools>['tools']): [string, Record<string, unknown>] {
  const [head, ...rest] = spec.trim().split(/\s+/);
  if (head === 'home') return ['get_state', {}];
  // `group <action> [kind=...] [area=...|floor=...|entities=a,b]`: one grouped call (control_group).
  if (head === 'group') {
    const [action, ...pairs] = rest;
    const args: Record<string, unknown> = { action };
    for (const p of pairs) {
      const [k, ...v] = p.split('=');
      const text = v.join('=').replace(/\+/g, ' ');
      args[k] = k === 'entities' ? text.split(',') : text;
    }
    return ['control_group', args];
  }
  if (head === 'area') return ['get_state', { area: rest.join(' ') }];
  if (head === 'read') return ['get_state', { entity: rest[0] }];
  if (head === 'camera') return ['get_camera_image', { camera: rest[0] }];
  // `audit [<entity>] [k=v|k=~...]` and `policy <entity> action=... [for=...]`: the audit and the policy (issue 42).
  if (head === 'audit' || head === 'policy') {
    const args: Record<string, unknown> = {};
    for (const p of rest) {
      if (!p.includes('=')) args.entity = p;
      else {
        const [k, ...v] = p.split('=');
        args[k] = v.join('=');
      }
    }
    return [head === 'audit' ? 'get_audit' : 'explain_policy', args];
  }
  if (head === 'history') {
    const args: Record<string, unknown> = { entity: rest[0] };
    for (const p of rest.slice(1)) {
      const [k, ...v] = p.split('=');
      args[k] = v.join('=');
    }
    return ['get_history', args];
  }
  const e = entities.get(head);
  if (!e) throw new Error(`corpus names an unknown entity ${head}`);
  const [action, ...pairs] = rest;
  const tool = tools.find(
    (t) => t.capability === 'actuator' && !t.meta.group && t.meta.entityIds.includes(head) && (t.meta.actions.length === 0 || t.meta.actions.includes(action)),
  );
  if (!tool) throw new Error(`no actuator tool for ${head} ${action}`);
  const args: Record<string, unknown> = { entity: head, action };
  // A tool without an action argument (a scene's, a button's): the action is the tool's only one.
  if (!('action' in ((tool.parameters as { properties?: Record<string, unknown> }).properties ?? {}))) delete args.action;
  for (const p of pairs) {
    const [k, ...v] = p.split('=');
    // `+` stands for a space ("color=sky+blue").
    args[k] = value(v.join('=').replace(/\+/g, ' '));
  }
  return [tool.name, args];
}

function setUp(file: string) {
  const corpus = parse(readFileSync(join(DIR, file), 'utf8')) as Corpus;
  const entities = homeOf(corpus.home);
  const byId = new Map(entities.map((e) => [e.id, e]));
  const { tools } = generateTools(entities, { shape: 'grouped', groupAbove: 0 }, async () => ({}));
  const states = new Map<string, EntityState>(
    Object.entries(corpus.states ?? {}).map(([id, s]) => [
      id,
      { entityId: id, value: s.value, attributes: s.attributes ?? {}, available: true } as EntityState,
    ]),
  );
  // A fixed afternoon: "this morning" and "last night" are whole windows in the past whatever the time of the run.
  const afternoon = new Date();
  afternoon.setHours(15, 0, 0, 0);
  const provider = new IntentProvider({ entities: () => entities, tools: () => tools, state: (id) => states.get(id), now: () => afternoon.getTime() });
  const names = toolSpecs(tools).map((s) => s.function.name);
  return { corpus, entities, byId, tools, provider, names };
}

/** One sentence in its session: what was said before it is understood first, each turn after the one before. */
function say(provider: IntentProvider, names: string[], entry: Entry) {
  let previous: PreviousTurn | undefined;
  for (const before of entry.after ?? []) previous = provider.turn(provider.understand(before, names, { area: entry.area, previous }));
  const offered = entry.without ? names.filter((n) => !entry.without!.includes(n.replace(/^host__/, ''))) : names;
  return provider.understand(entry.say, offered, { area: entry.area, previous });
}

const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

describe('intent model: the utterance corpus', () => {
  it('has several hundred sentences on both homes', () => {
    const corpora = files.map((f) => parse(readFileSync(join(DIR, f), 'utf8')) as Corpus);
    const total = corpora.reduce((n, c) => n + c.utterances.length, 0);
    assert.ok(total >= 300, `${total} sentences`);
    assert.ok(corpora.some((c) => c.home === 'demo') && corpora.some((c) => c.home === 'generated'));
  });

  for (const file of files) {
    it(`${file}: every sentence gives its calls`, () => {
      const { corpus, byId, tools, provider, names } = setUp(file);
      const byIntent = new Map<string, { ok: number; all: number }>();
      const failures: string[] = [];
      for (const entry of corpus.utterances) {
        const r = say(provider, names, entry);
        const label = entry.intent ?? (entry.reply ? 'reply' : '?');
        const tally = byIntent.get(label) ?? byIntent.set(label, { ok: 0, all: 0 }).get(label)!;
        tally.all++;
        // A history window depends on the clock: `~` in the corpus stands for any time given.
        const anyTime = (c: { tool: string; args: Record<string, unknown> }, i: number) => {
          const spec = entry.calls?.[i] ?? '';
          const args = { ...c.args };
          for (const k of ['since', 'until']) if (spec.includes(` ${k}=~`) && typeof args[k] === 'string') args[k] = '~';
          return args;
        };
        const got = r.calls.map((c, i) => [c.tool, anyTime(c, i)]);
        let ok: boolean;
        let want: unknown;
        if (entry.reply) {
          want = `reply /${entry.reply}/`;
          ok = r.calls.length === 0 && new RegExp(entry.reply, 'i').test(r.text ?? '');
        } else {
          want = (entry.calls ?? []).map((c) => expected(c, byId, tools));
          ok = JSON.stringify(got) === JSON.stringify(want) && (!entry.intent || r.intent === entry.intent);
        }
        if (ok) tally.ok++;
        else
          failures.push(
            `${JSON.stringify(entry.say)}${entry.area ? ` (in ${entry.area})` : ''}: want ${entry.intent ?? ''} ${JSON.stringify(want)}, got ${r.intent ?? ''} ${got.length ? JSON.stringify(got) : JSON.stringify(r.text)}`,
          );
      }
      const report = [...byIntent].sort().map(([k, t]) => `${k} ${t.ok}/${t.all} (${((100 * t.ok) / t.all).toFixed(0)}%)`);
      console.log(`${file}: ${corpus.utterances.length - failures.length}/${corpus.utterances.length}; by intent: ${report.join(', ')}`);
      assert.deepEqual(failures, [], `${failures.length} of ${corpus.utterances.length} sentences wrong:\n${failures.join('\n')}`);
    });
  }

  // Issue 28: worse than a miss is acting on something else. Whatever the exact calls, no sentence may
  // touch an entity its expectation does not name (a reply names none); a grouped call counts its members.
  for (const file of files) {
    it(`${file}: no sentence acts on an entity its expectation does not name`, () => {
      const { corpus, entities, byId, tools, provider, names } = setUp(file);
      const members = (tool: string, args: Record<string, unknown>): string[] => {
        if (tool === 'control_group') {
          const t = tools.find((x) => x.name === tool)!;
          const got = selectGroup(
            args,
            entities.filter((e) => t.meta.entityIds.includes(e.id)),
          );
          return typeof got === 'string' ? [`invalid group call: ${got}`] : got.map((e) => e.id);
        }
        const t = tools.find((x) => x.name === tool);
        if (t?.capability !== 'actuator') return [];
        return typeof args.entity === 'string' ? [args.entity] : t.meta.entityIds;
      };
      const wrong: string[] = [];
      for (const entry of corpus.utterances) {
        const named = new Set((entry.calls ?? []).flatMap((c) => members(...expected(c, byId, tools))));
        const r = say(provider, names, entry);
        const acted = r.calls.flatMap((c) => members(c.tool, c.args));
        const extra = acted.filter((id) => !named.has(id));
        if (extra.length) wrong.push(`${JSON.stringify(entry.say)}${entry.area ? ` (in ${entry.area})` : ''} acted on ${extra.join(', ')}`);
      }
      assert.deepEqual(wrong, []);
    });
  }
});
