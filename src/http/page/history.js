// A device's history: a line chart for numbers, a timeline for states.
import { $, api, fmtAgo, fmtDateTime, h, state } from './shared.js';
import { stateWord } from './values.js';

// ------------------------------------------------------------------ history charts

const RANGES = { '1h': ['1 h', 3_600_000], '24h': ['24 h', 86_400_000], '7d': ['7 d', 7 * 86_400_000] };

function loadUplot() {
  state.uplot ??= new Promise((resolve, reject) => {
    document.head.append(h('link', { rel: 'stylesheet', href: '/vendor/uPlot.min.css' }));
    const s = h('script', { src: '/vendor/uPlot.iife.min.js' });
    s.addEventListener('load', () => resolve(window.uPlot));
    s.addEventListener('error', () => {
      state.uplot = null;
      reject(new Error('the chart library did not load'));
    });
    document.head.append(s);
  });
  return state.uplot;
}

export function openHistory(id, range = '24h') {
  const e = state.devices.get(id);
  if (!e) return;
  const dlg = $('#history');
  dlg.dataset.entity = id;
  $('#history-title').textContent = `History: ${e.name}`;
  $('#history-title').title = id;
  for (const b of dlg.querySelectorAll('[data-range]')) b.setAttribute('aria-pressed', String(b.dataset.range === range));
  if (!dlg.open) dlg.showModal();
  void drawHistory(e, range);
}

async function drawHistory(e, range) {
  const box = $('#history-chart');
  box.replaceChildren(h('p', { class: 'muted' }, 'Loading…'));
  const width = Math.max(280, Math.min(box.clientWidth || 800, 1100));
  const points = Math.min(2000, Math.max(50, Math.round(width / 2)));
  let data;
  try {
    data = await api('GET', `/api/history?${new URLSearchParams({ entity: e.id, since: `-${range}`, points: String(points) })}`);
  } catch (err) {
    box.replaceChildren(h('p', { class: 'error' }, `No history: ${err.message}`));
    return;
  }
  box.dataset.points = String(data.points.length);
  box.dataset.type = data.type;
  box.dataset.range = range;
  const all = data.before ? [{ ...data.before, ts: data.since }, ...data.points] : data.points;
  if (!all.length) {
    box.replaceChildren(h('p', { class: 'muted' }, `Nothing recorded in the last ${RANGES[range][0]} (history keeps ${data.retentionDays} days of changes).`));
    return;
  }
  const summary = h('p', { class: 'sr-only' });
  if (data.type === 'number') {
    const values = all.map((p) => p.value);
    summary.textContent = `${all.length} points, low ${Math.min(...values)}, high ${Math.max(...values)}${data.unit ? ` ${data.unit}` : ''}.`;
    box.replaceChildren(summary);
    let uPlot;
    try {
      uPlot = await loadUplot();
    } catch (err) {
      box.append(h('p', { class: 'error' }, err.message));
      return;
    }
    const xs = all.map((p) => p.ts / 1000);
    xs.push(data.until / 1000);
    const ys = [...values, values[values.length - 1]];
    const series = [{}, { label: `${e.name}${data.unit ? ` (${data.unit})` : ''}`, stroke: 'var(--chart)', width: 2, points: { show: all.length < 60 } }];
    const cols = [xs, ys];
    if (data.bucketMs) {
      cols.push([...all.map((p) => p.min ?? p.value), null], [...all.map((p) => p.max ?? p.value), null]);
      series.push({ label: 'low', stroke: 'var(--chart-soft)', width: 1 }, { label: 'high', stroke: 'var(--chart-soft)', width: 1 });
    }
    const css = getComputedStyle(document.documentElement);
    for (const s of series.slice(1)) s.stroke = css.getPropertyValue(s.stroke.slice(4, -1)).trim() || '#b4521e';
    const axis = { stroke: css.getPropertyValue('--muted').trim(), grid: { stroke: css.getPropertyValue('--line').trim() } };
    const plot = new uPlot(
      { width, height: 260, series, axes: [axis, axis], scales: { x: { time: true, min: data.since / 1000, max: data.until / 1000 } } },
      cols,
      box,
    );
    plot.root.setAttribute('role', 'img');
    plot.root.setAttribute('aria-label', `Line chart of ${e.name} over the last ${RANGES[range][0]}`);
    return;
  }
  // States: a timeline of who-held-when, as segments across the range.
  const span = data.until - data.since;
  const bar = h('div', { class: 'timeline', role: 'img', 'aria-label': `Timeline of ${e.name} over the last ${RANGES[range][0]}` });
  const legend = new Map();
  all.forEach((p, i) => {
    const from = Math.max(p.ts, data.since);
    const to = i + 1 < all.length ? all[i + 1].ts : data.until;
    // The words the card says (Motion/Clear, Open/Closed); the colour by the raw value.
    const raw = p.value === null || p.value === undefined ? '' : String(p.value);
    const word = stateWord(e, p.value);
    const cls = /^(on|open|unlocked|heat|cool|auto|opening)$/.test(raw) ? 'seg-on' : /^(off|closed|locked|stopped)$/.test(raw) ? 'seg-off' : 'seg-other';
    legend.set(word, cls);
    bar.append(
      h('span', {
        class: `seg ${cls}`,
        style: { left: `${((from - data.since) / span) * 100}%`, width: `${Math.max(0.15, ((to - from) / span) * 100)}%` },
        title: `${word}: ${fmtDateTime(new Date(from).toISOString())} – ${fmtDateTime(new Date(to).toISOString())}`,
        dataset: { state: raw },
      }),
    );
  });
  const changes = data.points.length;
  summary.textContent = `${changes} changes; now ${stateWord(e, all[all.length - 1].value)}.`;
  box.replaceChildren(
    summary,
    bar,
    h('div', { class: 'timeline-axis', 'aria-hidden': 'true' }, h('span', {}, fmtDateTime(new Date(data.since).toISOString())), h('span', {}, 'now')),
    h(
      'p',
      { class: 'legend' },
      [...legend].map(([w, cls]) => h('span', {}, h('span', { class: `seg-key ${cls}` }), w)),
    ),
    h(
      'ol',
      { class: 'changes' },
      data.points
        .slice(-8)
        .reverse()
        .map((p) =>
          h(
            'li',
            {},
            h('time', { datetime: new Date(p.ts).toISOString(), title: fmtDateTime(new Date(p.ts).toISOString()) }, fmtAgo(new Date(p.ts).toISOString())),
            ` ${stateWord(e, p.value)}`,
          ),
        ),
    ),
  );
}

export function setupHistory() {
  const dlg = $('#history');
  for (const b of dlg.querySelectorAll('[data-range]')) b.addEventListener('click', () => openHistory(dlg.dataset.entity, b.dataset.range));
  $('#history-close').addEventListener('click', () => dlg.close());
}

// ------------------------------------------------------------------ sparklines

const SPARK_MS = 5 * 60_000;
const SVG = 'http://www.w3.org/2000/svg';

/** Does a card get a sparkline? A sensor whose value is a number. */
export const wantsSparkline = (e) => e.kind === 'sensor' && typeof e.value === 'number';

/**
 * A small line of the last 24 h under a sensor card's value (48 points from /api/history, fetched at most every
 * 5 min per sensor; the live value is its last point). Empty until the history arrives.
 */
export function sparkline(e) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('viewBox', '0 0 100 24');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('aria-hidden', 'true');
  svg.dataset.spark = e.id;
  const s = state.sparks.get(e.id);
  if (s?.values) drawSpark(svg, s.values);
  if (!s || (!s.loading && Date.now() - s.at > SPARK_MS)) void loadSpark(e.id);
  return svg;
}

async function loadSpark(id) {
  const s = { values: state.sparks.get(id)?.values ?? null, at: Date.now(), loading: true };
  state.sparks.set(id, s);
  try {
    const data = await api('GET', `/api/history?${new URLSearchParams({ entity: id, since: '-24h', points: '48' })}`);
    const all = data.before ? [data.before, ...data.points] : data.points;
    s.values = all.map((p) => p.value).filter((v) => typeof v === 'number');
  } catch {
    s.values ??= [];
  } finally {
    s.loading = false;
  }
  noteSparkValue(id, state.devices.get(id)?.value);
  for (const svg of document.querySelectorAll(`svg.spark[data-spark="${CSS.escape(id)}"]`)) drawSpark(svg, s.values);
}

/** A live value joins its sensor's line (a new home has no history yet: the line grows as values arrive). */
export function noteSparkValue(id, value) {
  const s = state.sparks.get(id);
  if (!s?.values || typeof value !== 'number') return;
  s.values.push(value);
  if (s.values.length > 96) s.values.splice(0, s.values.length - 96);
}

function drawSpark(svg, raw) {
  const values = raw.filter((v) => typeof v === 'number' && Number.isFinite(v));
  svg.replaceChildren();
  if (values.length < 2) return;
  const lo = Math.min(...values);
  const span = Math.max(...values) - lo || 1;
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('points', values.map((v, i) => `${((i / (values.length - 1)) * 100).toFixed(1)},${(22 - ((v - lo) / span) * 20).toFixed(1)}`).join(' '));
  line.setAttribute('vector-effect', 'non-scaling-stroke');
  svg.append(line);
  svg.dataset.points = String(values.length);
}
