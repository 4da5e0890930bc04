// Hearth's web page: chat (typed or spoken), live devices, approvals, the
// audit log and the policy. Plain JavaScript, no build step, no outside
// resources. Everything goes through the same HTTP API as any other client,
// with the token in an Authorization header (so no cookies, no CSRF); text
// from the home is only ever set as textContent.

const TOKEN_KEY = 'hearth.token';
const SPEAK_KEY = 'hearth.speak';
const ASK_KEY = 'hearth.askAll';
const VIEWS = ['chat', 'devices', 'approvals', 'audit', 'policy'];

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  authOff: false,
  principal: null,
  owner: null,
  /** id -> entity (the /api/devices shape, kept live by state events). */
  devices: new Map(),
  devicesLoaded: false,
  /** id -> approval. */
  approvals: new Map(),
  sessionId: null,
  turn: null,
  events: null,
  view: null,
  audit: { rows: new Map(), filters: {}, oldest: null, loaded: false },
  /** auditId -> tool cards waiting for their row. */
  cardsByAudit: new Map(),
  policyLoaded: false,
  /** Tools for the policy test form. */
  tools: null,
  /** entity id -> {url, at, pending} for camera frames. */
  frames: new Map(),
  /** entity id -> what this principal may do with it (GET /api/controls). */
  controls: new Map(),
  /** entity id -> the last control result shown on its card. */
  controlStatus: new Map(),
  /** approval id -> the held control call waiting for it. */
  waiting: new Map(),
  /** The entity whose slider is being dragged (its card is not redrawn under the finger). */
  dragging: null,
  uplot: null,
};

// ------------------------------------------------------------------ helpers

const $ = (sel, root = document) => root.querySelector(sel);

/** Build an element: h('p', {class: 'x', onclick}, 'text', child). Strings become text nodes. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    // Through the CSSOM: the page's CSP allows no inline style attributes.
    else if (k === 'style' && typeof v === 'object') for (const [p, val] of Object.entries(v)) el.style.setProperty(p, val);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

function fmtValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  return String(v);
}

function pretty(obj) {
  try {
    return JSON.stringify(obj, null, 2);
  } catch {
    return String(obj);
  }
}

function toolLabel(name) {
  return String(name ?? '').replace(/^host__/, '');
}

let toastTimer;
/** A short message at the bottom; `about` ties it to something (an approval) so it can be taken back. */
function toast(message, about = null) {
  const el = $('#toast');
  el.textContent = message;
  el.dataset.about = about ?? '';
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), 6000);
}

function untoast(about) {
  const el = $('#toast');
  if (!el.hidden && el.dataset.about === about) el.hidden = true;
}

function outcomeBadge(outcome) {
  return h('span', { class: `outcome outcome-${outcome}`, dataset: { outcome } }, outcome);
}

// ------------------------------------------------------------------ API

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function authHeaders(extra = {}) {
  const headers = { ...extra };
  if (state.token) headers.authorization = `Bearer ${state.token}`;
  return headers;
}

async function api(method, path, body, { signal, quiet401 = false } = {}) {
  const init = { method, headers: authHeaders({ accept: 'application/json' }), signal, cache: 'no-store' };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const err = json?.error ?? {};
    if (res.status === 401 && !quiet401) signedOut('Your token was not accepted (revoked or unknown). Sign in again.');
    throw new ApiError(res.status, err.code ?? 'http_error', err.message ?? `${method} ${path}: HTTP ${res.status}`);
  }
  return json;
}

/** Read a text/event-stream response, calling onEvent(name, data) per event. */
async function readSse(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue;
      let parsed;
      try {
        parsed = JSON.parse(data.join('\n'));
      } catch {
        continue;
      }
      try {
        onEvent(event, parsed);
      } catch (err) {
        console.warn('event handler failed', event, err);
      }
    }
  }
}

/** Fetch an authenticated binary (a camera frame, an export) as a blob. */
async function fetchBlob(path) {
  const res = await fetch(path, { headers: authHeaders(), cache: 'no-store' });
  if (!res.ok) {
    let message = `HTTP ${res.status}`;
    try {
      message = (await res.json()).error.message;
    } catch {
      // not JSON
    }
    throw new ApiError(res.status, 'http_error', message);
  }
  return { blob: await res.blob(), headers: res.headers };
}

// ------------------------------------------------------------------ sign in

function showOnly(id) {
  for (const el of ['loading', 'login', 'app']) $(`#${el}`).hidden = el !== id;
}

function signedOut(message) {
  state.token = null;
  sessionStorage.removeItem(TOKEN_KEY);
  state.events?.abort();
  state.events = null;
  state.turn?.abort.abort();
  showOnly('login');
  $('#login-error').textContent = message ?? '';
  $('#token').value = '';
  $('#token').focus();
}

/** Does the server take us as we are (token or none)? Seeds the approvals on the way. */
async function probe() {
  const list = await api('GET', '/api/approvals?status=pending', undefined, { quiet401: true });
  for (const a of list) state.approvals.set(a.id, a);
  renderApprovals();
}

async function boot() {
  setupChat();
  setupAudit();
  setupPolicy();
  setupHistory();
  setupPolicyEdit();
  $('#login-form').addEventListener('submit', onLogin);
  $('#logout').addEventListener('click', () => signedOut('Signed out.'));
  window.addEventListener('hashchange', route);
  try {
    await probe();
    state.authOff = !state.token;
    start();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      showOnly('login');
      $('#login-error').textContent = state.token ? 'Your saved token was not accepted; sign in again.' : '';
      state.token = null;
      sessionStorage.removeItem(TOKEN_KEY);
      $('#token').focus();
    } else {
      showOnly('login');
      $('#login-error').textContent = `Cannot reach Hearth: ${err.message}`;
    }
  }
}

async function onLogin(ev) {
  ev.preventDefault();
  const token = $('#token').value.trim();
  const error = $('#login-error');
  if (!token) {
    error.textContent = 'Enter a token.';
    return;
  }
  state.token = token;
  error.textContent = '';
  try {
    await probe();
  } catch (err) {
    state.token = null;
    error.textContent =
      err.status === 401 ? 'That token was not accepted: check it, or make a new one with hearth token create.' : `Cannot sign in: ${err.message}`;
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  start();
}

function start() {
  showOnly('app');
  $('#logout').hidden = state.authOff;
  connectEvents();
  route();
  // Approvals reach us as events (the server also watches other processes); look now and then in case the stream was down.
  state.approvalPoll ??= setInterval(() => {
    if (state.token || state.authOff) {
      if (document.visibilityState === 'visible' && !$('#app').hidden) void refreshApprovals();
    }
  }, 10_000);
}

// ------------------------------------------------------------------ routing

function route() {
  const [path, qs] = location.hash.replace(/^#/, '').split('?');
  const [name, arg] = path.split('/');
  if (name === 'audit') fillAuditFilters(new URLSearchParams(qs ?? ''));
  const view = VIEWS.includes(name) ? name : 'chat';
  state.view = view;
  for (const v of VIEWS) $(`#view-${v}`).hidden = v !== view;
  $('#app').classList.toggle('chat-mode', view === 'chat');
  for (const a of document.querySelectorAll('.tabs a')) {
    if (a.dataset.view === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (view === 'audit') showAudit(arg ? Number(arg) : undefined);
  if (view === 'policy') loadPolicy();
  if (view === 'devices') renderDevices();
  if (view === 'approvals') void refreshApprovals();
  if (view === 'chat') {
    scrollChat();
    $('#chat-input').focus({ preventScroll: true });
  }
}

// ------------------------------------------------------------------ live events

async function connectEvents() {
  let delay = 1000;
  const live = $('#live');
  for (;;) {
    if (!$('#app') || $('#app').hidden) return;
    const abort = new AbortController();
    state.events = abort;
    try {
      const res = await fetch('/api/events', { headers: authHeaders({ accept: 'text/event-stream' }), signal: abort.signal, cache: 'no-store' });
      if (res.status === 401) {
        signedOut('Your token was not accepted (revoked or unknown). Sign in again.');
        return;
      }
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      delay = 1000;
      await readSse(res, onLiveEvent);
    } catch (err) {
      if (abort.signal.aborted) return;
      console.warn('event stream', err);
    }
    live.textContent = 'offline';
    live.className = 'live off';
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10_000);
  }
}

function onLiveEvent(event, data) {
  switch (event) {
    case 'ready': {
      state.principal = data.principal;
      $('#whoami').textContent = data.principal;
      const live = $('#live');
      live.textContent = 'live';
      live.className = 'live on';
      // The stream is open first, then the snapshot: no change falls between them.
      void loadDevices();
      void refreshApprovals();
      break;
    }
    case 'state':
      applyState(data);
      break;
    case 'audit':
      onAuditRow(data);
      break;
    case 'approval':
      state.approvals.set(data.id, data);
      onControlApproval(data);
      renderApprovals();
      if (data.event === 'requested' && data.status === 'pending' && state.view !== 'approvals') {
        toast(`Approval needed: ${approvalWords(data)} for ${data.principal} (see Approvals)`, data.id);
      } else if (data.status !== 'pending') {
        untoast(data.id);
      }
      break;
  }
}

// ------------------------------------------------------------------ devices

async function loadDevices() {
  try {
    await loadControls();
    const list = await api('GET', '/api/devices');
    for (const e of list) {
      const known = state.devices.get(e.id);
      // A state event may have overtaken the snapshot: keep the newer.
      if (known && known.updatedAt && e.updatedAt && known.updatedAt > e.updatedAt) continue;
      state.devices.set(e.id, { ...known, ...e });
    }
    state.devicesLoaded = true;
    // Audit rows drawn before the devices arrived read ids: give them their names.
    for (const td of document.querySelectorAll('#audit-rows td.c-entity')) {
      const e = state.devices.get(td.title);
      if (e) td.textContent = e.name;
    }
    const entities = $('#entity-list');
    entities.replaceChildren(...[...state.devices.keys()].sort().map((id) => h('option', { value: id })));
    renderDevices();
  } catch (err) {
    if (err.status !== 401) toast(`Could not load the devices: ${err.message}`);
  }
}

function applyState(s) {
  const known = state.devices.get(s.id);
  const merged = { ...known, ...s, device: known?.device ?? s.device };
  state.devices.set(s.id, merged);
  if (!state.devicesLoaded) return;
  if (state.dragging === s.id) return;
  const card = document.querySelector(`.entity[data-entity="${CSS.escape(s.id)}"]`);
  if (card) {
    // Keep the keyboard where it was: the same control in the new card gets the focus back.
    const focused = card.contains(document.activeElement) ? document.activeElement?.dataset?.control : undefined;
    const open = card.querySelector('details.more')?.open;
    // A choice made in a select but not yet Set survives the new state (a report must not undo it).
    const pending = [...card.querySelectorAll('select[data-control]')].filter((sel) => sel.value !== sel.dataset.shown);
    const fresh = entityCard(merged);
    if (open) fresh.querySelector('details.more').open = true;
    for (const sel of pending) {
      const same = fresh.querySelector(`select[data-control="${CSS.escape(sel.dataset.control)}"]`);
      if (same && [...same.options].some((o) => o.value === sel.value)) same.value = sel.value;
    }
    card.replaceWith(fresh);
    if (focused) fresh.querySelector(`[data-control="${CSS.escape(focused)}"]`)?.focus();
  } else renderDevices();
}

function renderDevices() {
  if (!state.devicesLoaded) return;
  const root = $('#devices');
  const areas = new Map();
  for (const e of state.devices.values()) {
    const area = e.area ?? 'No area';
    if (!areas.has(area)) areas.set(area, []);
    areas.get(area).push(e);
  }
  const names = [...areas.keys()].sort((a, b) => (a === 'No area') - (b === 'No area') || a.localeCompare(b));
  root.replaceChildren(
    ...names.map((area) =>
      h(
        'section',
        { class: 'area', 'aria-label': area },
        h('h3', {}, area),
        h(
          'div',
          { class: 'entities' },
          areas
            .get(area)
            .sort((a, b) => a.name.localeCompare(b.name))
            .map(entityCard),
        ),
      ),
    ),
  );
  const all = [...state.devices.values()];
  const offline = all.filter((e) => e.available === false).length;
  $('#devices-summary').textContent = `${all.length} entities in ${names.length} areas${offline ? `, ${offline} offline` : ', all online'} · live`;
}

function availability(e) {
  if (e.available === true) return h('span', { class: 'avail on', title: 'available' }, 'online');
  if (e.available === false) return h('span', { class: 'avail off', title: 'unavailable' }, 'offline');
  return h('span', { class: 'avail unknown', title: 'availability not reported yet' }, 'unknown');
}

// ------------------------------------------------------------------ values people read

/** "3 min ago" (the exact date and time go in the title). */
function fmtAgo(iso) {
  if (!iso) return '';
  const ms = Date.now() - new Date(iso).getTime();
  if (ms < 5000) return 'just now';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const hr = Math.round(m / 60);
  if (hr < 48) return `${hr} h ago`;
  return `${Math.round(hr / 24)} days ago`;
}

/** Date and time, always both (an audit row from last week is not "10:42"). */
function fmtDateTime(iso) {
  if (!iso) return '';
  return new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'medium' });
}

/** A <time> that reads as "3 min ago" with the full date on hover; kept fresh by a timer. */
function relTime(iso) {
  return h('time', { datetime: iso, title: fmtDateTime(iso), dataset: { rel: iso } }, fmtAgo(iso));
}

setInterval(() => {
  for (const t of document.querySelectorAll('time[data-rel]')) t.textContent = fmtAgo(t.dataset.rel);
}, 15_000);

const COLOR_WORDS = {
  red: [255, 0, 0],
  orange: [255, 140, 0],
  amber: [255, 191, 0],
  yellow: [255, 255, 0],
  lime: [191, 255, 0],
  green: [0, 255, 0],
  teal: [0, 128, 128],
  cyan: [0, 255, 255],
  'sky blue': [135, 206, 235],
  blue: [0, 0, 255],
  indigo: [75, 0, 130],
  violet: [143, 0, 255],
  purple: [128, 0, 128],
  magenta: [255, 0, 255],
  pink: [255, 105, 180],
  coral: [255, 127, 80],
  white: [255, 255, 255],
};
/** Swatches offered on a colour light (names the light takes). */
const SWATCHES = ['white', 'amber', 'red', 'orange', 'yellow', 'green', 'cyan', 'blue', 'purple', 'pink'];

const gamma = (v) => (v <= 0.0031308 ? 12.92 * v : 1.055 * v ** (1 / 2.4) - 0.055);
/** The colour a light reports (xy, hue/saturation or RGB) as [r, g, b], or null. */
function lightRgb(a) {
  const n = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const x = n(a.color_x),
    y = n(a.color_y);
  if (x !== undefined && y !== undefined && y > 0) {
    const X = x / y,
      Z = (1 - x - y) / y;
    const lin = [3.2406 * X - 1.5372 - 0.4986 * Z, -0.9689 * X + 1.8758 + 0.0415 * Z, 0.0557 * X - 0.204 + 1.057 * Z].map((v) => Math.max(0, v));
    const max = Math.max(...lin) || 1;
    return lin.map((v) => Math.round(gamma(v / max) * 255));
  }
  const hue = n(a.hue),
    sat = n(a.saturation);
  if (hue !== undefined && sat !== undefined) {
    const s = Math.min(100, Math.max(0, sat)) / 100;
    const f = (k0) => {
      const k = (k0 + (((hue % 360) + 360) % 360) / 60) % 6;
      return Math.round(255 * (1 - s * Math.max(0, Math.min(k, 4 - k, 1))));
    };
    return [f(5), f(3), f(1)];
  }
  if ([a.red, a.green, a.blue].every((v) => n(v) !== undefined)) return [a.red, a.green, a.blue];
  return null;
}
const hex = (rgb) => `#${rgb.map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
function colorName(rgb) {
  let best = '',
    bestD = Infinity;
  for (const [name, c] of Object.entries(COLOR_WORDS)) {
    const d = (rgb[0] - c[0]) ** 2 + (rgb[1] - c[1]) ** 2 + (rgb[2] - c[2]) ** 2;
    if (d < bestD) [best, bestD] = [name, d];
  }
  return best;
}

const COLOR_KEYS = new Set(['color_x', 'color_y', 'hue', 'saturation', 'red', 'green', 'blue', 'color_temp']);

/** A reported color_temp as kelvin: lights speak mireds (100-1000) or kelvin (1000 and up). */
const kelvinOf = (v) => (v > 1000 ? v : 1e6 / v);

/** 2700 K reads as "warm white · 2,700 K". */
function kelvinWords(k) {
  // The words the state text uses (src/devices/color-temp.ts).
  const word = k < 2300 ? 'candlelight' : k < 3500 ? 'warm white' : k < 4500 ? 'neutral white' : k < 5700 ? 'cool white' : 'daylight';
  return `${word} · ${Math.round(k / 50) * 50} K`;
}

/** The card's big value, in words a person reads: "On · 76%", "21.4 °C", "Open · 40%". */
function mainValue(e, ctl) {
  const withUnit = (v) => `${fmtValue(v)}${e.unit && typeof v === 'number' ? ` ${e.unit}` : ''}`;
  const a = e.attributes ?? {};
  const cap = (v) => {
    const t = fmtValue(v).replace(/_/g, ' ');
    return t.charAt(0).toUpperCase() + t.slice(1);
  };
  if (e.kind === 'camera') return e.frame ? 'Live picture' : 'No picture yet';
  if (e.kind === 'button') return e.updatedAt ? 'Pressed' : 'Button';
  if (e.value === null || e.value === undefined) return '—';
  if (e.kind === 'binary_sensor') {
    const words = {
      motion: ['Motion', 'Clear'],
      occupancy: ['Motion', 'Clear'],
      door: ['Open', 'Closed'],
      window: ['Open', 'Closed'],
      garage_door: ['Open', 'Closed'],
    }[e.deviceClass] ?? ['On', 'Off'];
    return e.value === 'on' ? words[0] : e.value === 'off' ? words[1] : cap(e.value);
  }
  if (e.kind === 'light' && e.value === 'on' && typeof a.brightness === 'number') {
    const max = ctl?.properties?.brightness?.maximum ?? 255;
    return `On · ${Math.round((a.brightness / max) * 100)}%`;
  }
  if ((e.kind === 'cover' || e.kind === 'valve') && typeof a.position === 'number') return `${cap(e.value)} · ${a.position}%`;
  if (e.kind === 'fan' && e.value === 'on' && typeof a.percentage === 'number') return `On · ${a.percentage}%`;
  if (e.kind === 'climate') return typeof a.current_temperature === 'number' ? withUnit(a.current_temperature) : cap(e.value);
  return typeof e.value === 'number' ? withUnit(e.value) : cap(e.value);
}

/** Attributes left for the details (the ones the value and controls already show are out). */
function detailAttrs(e) {
  const shown = new Set(COLOR_KEYS);
  if (e.kind === 'light') shown.add('brightness');
  if (e.kind === 'climate') shown.add('current_temperature');
  return Object.entries(e.attributes ?? {}).filter(([k, v]) => v !== null && !(shown.has(k) && e.kind === 'light'));
}

function entityCard(e) {
  const ctl = state.controls.get(e.id);
  const isCamera = e.kind === 'camera';
  const withUnit = (v) => `${fmtValue(v)}${e.unit && typeof v === 'number' ? ` ${e.unit}` : ''}`;
  const rgb = e.kind === 'light' ? lightRgb(e.attributes ?? {}) : null;
  const attrs = detailAttrs(e);
  const headingId = `card-${e.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const card = h(
    'article',
    {
      class: `entity kind-${e.kind}${e.available === false ? ' is-offline' : ''}${e.value === 'on' ? ' is-on' : ''}`,
      dataset: { entity: e.id },
      'aria-labelledby': headingId,
    },
    h('header', {}, h('h4', { id: headingId, title: e.id }, e.name), availability(e)),
    h(
      'p',
      { class: 'value', dataset: { value: isCamera ? '' : String(e.value ?? '') } },
      mainValue(e, ctl),
      rgb && e.value === 'on' ? h('span', { class: 'swatch', style: { background: hex(rgb) }, title: hex(rgb), 'aria-hidden': 'true' }) : null,
      rgb && e.value === 'on' ? h('span', { class: 'color-name' }, colorName(rgb)) : null,
    ),
    e.kind === 'light' &&
      typeof e.attributes?.color_temp === 'number' &&
      e.attributes.color_temp > 0 &&
      e.value === 'on' &&
      (e.attributes.color_mode ?? 'color_temp') === 'color_temp'
      ? h(
          'p',
          { class: 'sub', title: `${e.attributes.color_temp} ${e.attributes.color_temp > 1000 ? 'K' : 'mired'}` },
          `Colour temperature ${kelvinWords(kelvinOf(e.attributes.color_temp))}`,
        )
      : null,
    e.kind === 'climate' && typeof e.attributes?.temperature === 'number'
      ? h(
          'p',
          { class: 'sub' },
          `Target ${withUnit(e.attributes.temperature)} · ${fmtValue(e.value)}${e.attributes.action ? ` · ${fmtValue(e.attributes.action)}` : ''}`,
        )
      : null,
  );
  if (isCamera) {
    const img = h('img', { class: 'frame', alt: `Latest picture from ${e.name}`, width: 320, height: 180 });
    card.append(img);
    showFrame(e.id, img, e.updatedAt);
    card.append(
      h(
        'div',
        { class: 'controls' },
        h('button', { type: 'button', class: 'small', dataset: { control: 'snapshot' }, onclick: () => snapshot(e) }, 'Save snapshot'),
      ),
    );
  }
  const controls = controlsFor(e, ctl);
  if (controls) card.append(controls);
  const status = state.controlStatus.get(e.id);
  card.append(h('p', { class: 'control-status', role: 'status', 'aria-live': 'polite' }, status ? statusParts(status) : null));
  card.append(
    h(
      'footer',
      {},
      e.updatedAt ? h('span', { class: 'updated' }, e.retained ? 'reported before start' : relTime(e.updatedAt)) : h('span', {}, ''),
      isCamera || e.kind === 'button'
        ? null
        : h(
            'button',
            { type: 'button', class: 'link', dataset: { control: 'history' }, 'aria-label': `History of ${e.name}`, onclick: () => openHistory(e.id) },
            'History',
          ),
    ),
    h(
      'details',
      { class: 'more' },
      h('summary', {}, 'Details'),
      attrs.length
        ? h(
            'dl',
            { class: 'attrs' },
            attrs.flatMap(([k, v]) => [h('dt', {}, k.replace(/_/g, ' ')), h('dd', {}, /temperature/.test(k) ? withUnit(v) : fmtValue(v))]),
          )
        : null,
      h(
        'p',
        { class: 'meta' },
        `${e.kind.replace(/_/g, ' ')}${e.deviceClass ? ` · ${e.deviceClass}` : ''} · `,
        h('code', {}, e.id),
        e.updatedAt ? ` · ${fmtDateTime(e.updatedAt)}` : '',
      ),
    ),
  );
  return card;
}

async function snapshot(e) {
  try {
    const { blob, headers } = await fetchBlob(`/api/devices/${encodeURIComponent(e.id)}/frame`);
    const at = (headers.get('x-frame-at') ?? new Date().toISOString()).replace(/[:.]/g, '-');
    const ext = (blob.type.split('/')[1] ?? 'jpg').replace('jpeg', 'jpg');
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: `${e.id}-${at}.${ext}`, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    toast(`Saved a snapshot of ${e.name}`);
  } catch (err) {
    toast(`No snapshot from ${e.name}: ${err.message}`);
  }
}

// ------------------------------------------------------------------ controls

async function loadControls() {
  try {
    const r = await api('GET', '/api/controls');
    state.controls = new Map(Object.entries(r.controls));
  } catch (err) {
    if (err.status !== 401) console.warn('controls', err);
  }
}

/** The controls of one card: only those the policy could ever let this principal use; the rest are named with the reason. */
function controlsFor(e, ctl) {
  if (!ctl) return null;
  const may = (a) => ctl.actions[a]?.may === true;
  const props = ctl.properties ?? {};
  const off = e.available === false;
  const box = h('div', { class: 'controls', role: 'group', 'aria-label': `Controls for ${e.name}` });
  const button = (label, args, attrs = {}) =>
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        disabled: off,
        dataset: { control: args.action ?? label.toLowerCase() },
        onclick: () => callControl(e, args, label),
        ...attrs,
      },
      label,
    );
  const toggle = (onAction = 'turn_on', offAction = 'turn_off') => {
    const isOn = e.value === 'on';
    const next = isOn ? offAction : onAction;
    if (!may(next)) return null;
    return h(
      'button',
      {
        type: 'button',
        class: `toggle${isOn ? ' on' : ''}`,
        role: 'switch',
        'aria-checked': String(isOn),
        'aria-label': `${e.name}: ${isOn ? 'on' : 'off'}`,
        disabled: off,
        dataset: { control: 'toggle' },
        onclick: () => callControl(e, { action: next }, isOn ? 'Turn off' : 'Turn on'),
      },
      h('span', { class: 'knob', 'aria-hidden': 'true' }),
      isOn ? 'On' : 'Off',
    );
  };
  /** A slider that calls once on release (not on every step). */
  const slider = (label, control, { min, max, step = 1, value, unit = '' }, toArgs) => {
    const out = h('output', {}, `${value}${unit}`);
    const input = h('input', { type: 'range', min, max, step, value, disabled: off, 'aria-label': `${label} of ${e.name}`, dataset: { control } });
    input.addEventListener('input', () => (out.textContent = `${input.value}${unit}`));
    input.addEventListener('pointerdown', () => (state.dragging = e.id));
    // A press that moved nothing fires no change: let the card be redrawn again anyway.
    for (const ev of ['pointerup', 'pointercancel', 'blur'])
      input.addEventListener(ev, () => setTimeout(() => state.dragging === e.id && (state.dragging = null), 0));
    input.addEventListener('change', () => {
      state.dragging = null;
      callControl(e, toArgs(Number(input.value)), `${label} ${input.value}${unit}`);
    });
    return h('label', { class: 'slider' }, h('span', {}, label), input, out);
  };
  switch (e.kind) {
    case 'switch':
      box.append(toggle() ?? '');
      break;
    case 'light': {
      box.append(toggle() ?? '');
      if (props.brightness && may('turn_on')) {
        const max = props.brightness.maximum ?? 255;
        const b = typeof e.attributes?.brightness === 'number' && e.value === 'on' ? Math.round((e.attributes.brightness / max) * 100) : 0;
        box.append(
          slider('Brightness', 'brightness', { min: 1, max: 100, value: b, unit: '%' }, (pct) => ({
            action: 'turn_on',
            brightness: Math.max(props.brightness.minimum ?? 1, Math.round((pct / 100) * max)),
          })),
        );
      }
      if (props.color_temp && may('turn_on')) {
        const { minimum: min, maximum: max } = props.color_temp;
        const now =
          typeof e.attributes?.color_temp === 'number' && e.attributes.color_temp > 0
            ? Math.round(kelvinOf(e.attributes.color_temp))
            : Math.round((min + max) / 2);
        box.append(
          slider('Colour temperature', 'color-temp', { min, max, step: 10, value: Math.min(max, Math.max(min, now)), unit: ' K' }, (k) => ({
            action: 'turn_on',
            color_temp: Math.min(max, Math.max(min, k)),
          })),
        );
      }
      if (props.color && may('turn_on')) {
        const rgb = lightRgb(e.attributes ?? {});
        const swatches = h('div', { class: 'swatches', role: 'group', 'aria-label': `Colour of ${e.name}` });
        for (const name of SWATCHES) {
          swatches.append(
            h('button', {
              type: 'button',
              class: 'swatch-btn',
              style: { background: hex(COLOR_WORDS[name] ?? [255, 244, 229]) },
              title: name,
              'aria-label': `Colour ${name}`,
              disabled: off,
              dataset: { control: `color-${name.replace(/ /g, '-')}` },
              onclick: () => callControl(e, { action: 'turn_on', color: name }, `Colour ${name}`),
            }),
          );
        }
        const picker = h('input', {
          type: 'color',
          value: rgb ? hex(rgb) : '#ffffff',
          'aria-label': `Pick any colour for ${e.name}`,
          disabled: off,
          dataset: { control: 'color-picker' },
        });
        picker.addEventListener('change', () => callControl(e, { action: 'turn_on', color: picker.value }, `Colour ${picker.value}`));
        swatches.append(picker);
        box.append(swatches);
      }
      break;
    }
    case 'fan': {
      box.append(toggle() ?? '');
      if (props.percentage && may('set_percentage')) {
        box.append(
          slider(
            'Speed',
            'speed',
            { min: props.percentage.minimum ?? 0, max: props.percentage.maximum ?? 100, value: e.attributes?.percentage ?? 0, unit: '%' },
            (v) => ({ action: 'set_percentage', percentage: v }),
          ),
        );
      }
      if (props.preset_mode?.enum && may('set_preset_mode'))
        box.append(choice('Preset', 'preset', props.preset_mode.enum, e.attributes?.preset_mode, (v) => ({ action: 'set_preset_mode', preset_mode: v })));
      break;
    }
    case 'climate': {
      const t = props.temperature;
      if (t && may('set_temperature')) {
        const step = t.multipleOf ?? 0.5;
        const cur = typeof e.attributes?.temperature === 'number' ? e.attributes.temperature : (t.minimum + t.maximum) / 2;
        const set = (v) =>
          callControl(e, { action: 'set_temperature', temperature: Math.min(t.maximum, Math.max(t.minimum, Math.round(v / step) * step)) }, `Target ${v}`);
        box.append(
          h(
            'div',
            { class: 'stepper', role: 'group', 'aria-label': `Target temperature of ${e.name}` },
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': 'Lower the target',
                disabled: off || cur <= t.minimum,
                dataset: { control: 'target-down' },
                onclick: () => set(cur - step),
              },
              '−',
            ),
            h('span', { class: 'target' }, `${fmtValue(cur)}${e.unit ? ` ${e.unit}` : ''}`),
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': 'Raise the target',
                disabled: off || cur >= t.maximum,
                dataset: { control: 'target-up' },
                onclick: () => set(cur + step),
              },
              '+',
            ),
          ),
        );
      }
      if (props.mode?.enum && may('set_mode')) box.append(choice('Mode', 'mode', props.mode.enum, e.value, (v) => ({ action: 'set_mode', mode: v })));
      break;
    }
    case 'cover':
    case 'valve': {
      const row = h('div', { class: 'buttons' });
      for (const [a, label] of [
        ['open', 'Open'],
        ['stop', 'Stop'],
        ['close', 'Close'],
      ])
        if (ctl.actions[a] && may(a)) row.append(button(label, { action: a }));
      box.append(row);
      if (props.position && may('set_position')) {
        box.append(
          slider(
            'Position',
            'position',
            { min: props.position.minimum ?? 0, max: props.position.maximum ?? 100, value: e.attributes?.position ?? 0, unit: '%' },
            (v) => ({ action: 'set_position', position: v }),
          ),
        );
      }
      break;
    }
    case 'lock': {
      const row = h('div', { class: 'buttons' });
      for (const [a, label] of [
        ['lock', 'Lock'],
        ['unlock', 'Unlock'],
        ['open', 'Open'],
      ])
        if (ctl.actions[a] && may(a)) row.append(button(label, { action: a }));
      box.append(row);
      break;
    }
    case 'select':
      if (props.option?.enum && may('select_option')) box.append(choice('Option', 'option', props.option.enum, e.value, (v) => ({ option: v })));
      break;
    case 'number':
      if (props.value && may('set_value')) {
        const input = h('input', {
          type: 'number',
          min: props.value.minimum,
          max: props.value.maximum,
          step: props.value.multipleOf ?? 'any',
          value: e.value ?? '',
          'aria-label': `New value for ${e.name}`,
          disabled: off,
          dataset: { control: 'number' },
        });
        box.append(
          h(
            'div',
            { class: 'buttons' },
            input,
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                disabled: off,
                dataset: { control: 'set-number' },
                onclick: () => callControl(e, { value: Number(input.value) }, `Set ${input.value}`),
              },
              'Set',
            ),
          ),
        );
      }
      break;
    case 'button':
      if (may('press')) box.append(button('Press', {}, { dataset: { control: 'press' } }));
      break;
    default: {
      const row = h('div', { class: 'buttons' });
      for (const a of Object.keys(ctl.actions)) if (may(a)) row.append(button(a.replace(/_/g, ' '), { action: a }));
      box.append(row);
    }
  }
  const cannot = Object.entries(ctl.actions).filter(([, v]) => !v.may);
  if (cannot.length) {
    box.append(
      h(
        'p',
        { class: 'cannot', dataset: { cannot: cannot.map(([a]) => a).join(' ') } },
        cannot.length === Object.keys(ctl.actions).length ? 'View only: ' : `Not for you: ${cannot.map(([a]) => a.replace(/_/g, ' ')).join(', ')}. `,
        cannot[0][1].why ?? '',
      ),
    );
  }
  if (off) box.append(h('p', { class: 'cannot' }, 'Offline: nothing can be sent until it is back.'));
  return box.childElementCount ? box : null;
}

function choice(label, control, options, current, toArgs) {
  const id = `${control}-${Math.random().toString(36).slice(2, 8)}`;
  const select = h(
    'select',
    // `shown`: the device's value when drawn; a different value is the person's choice, not yet Set.
    { id, dataset: { control, shown: String(current ?? '') } },
    options.map((o) => h('option', { value: o, selected: o === current }, String(o).replace(/_/g, ' '))),
  );
  return h(
    'label',
    { class: 'choice', for: id },
    h('span', {}, label),
    select,
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        dataset: { control: `${control}-set` },
        onclick: () => callControlById(select.closest('.entity')?.dataset.entity, toArgs(select.value), `${label} ${select.value}`),
      },
      'Set',
    ),
  );
}

function callControlById(id, args, label) {
  const e = state.devices.get(id);
  if (e) void callControl(e, args, label);
}

function setControlStatus(id, outcome, text, full = text) {
  state.controlStatus.set(id, { outcome, text, full, at: Date.now() });
  const card = document.querySelector(`.entity[data-entity="${CSS.escape(id)}"]`);
  const el = card?.querySelector('.control-status');
  if (el) el.replaceChildren(...statusParts(state.controlStatus.get(id)));
}

function statusParts(status) {
  return [outcomeBadge(status.outcome), ' ', h('span', { class: 'status-text', title: status.full }, status.text)];
}

/** Run one control through the pipeline as this principal; the result shows as in chat. */
async function callControl(e, args, label) {
  setControlStatus(e.id, 'running', `${label}…`);
  try {
    const r = await api('POST', `/api/devices/${encodeURIComponent(e.id)}/call`, { args });
    // Short on the card (the whole result on hover), as a chat tool card shows it.
    const why = r.text.replace(/^(confirmed|unconfirmed|failed|not allowed|needs approval|not done):\s*/i, '');
    const words =
      r.outcome === 'waiting'
        ? `${label}: waiting for approval; an approver sees it now`
        : r.outcome === 'confirmed'
          ? label
          : r.outcome === 'unconfirmed'
            ? `${label}: sent, the device did not report back in time`
            : `${label}: ${why.length > 160 ? `${why.slice(0, 159)}…` : why}`;
    setControlStatus(e.id, r.outcome, words, r.text);
    if (r.outcome === 'waiting' && r.approvalId) state.waiting.set(r.approvalId, { id: e.id, args, label });
  } catch (err) {
    setControlStatus(e.id, 'failed', `${label}: ${err.message}`);
  }
}

/** A held control whose approval was decided: granted runs the same call again (it uses the approval up). */
function onControlApproval(a) {
  const w = state.waiting.get(a.id);
  if (!w || a.status === 'pending') return;
  state.waiting.delete(a.id);
  const e = state.devices.get(w.id);
  if (a.status === 'granted' && e) void callControl(e, w.args, w.label);
  else setControlStatus(w.id, 'denied', `${w.label}: ${a.status} by ${a.decidedBy ?? 'an approver'}`);
}

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

function openHistory(id, range = '24h') {
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
    box.replaceChildren(h('p', { class: 'muted' }, `Nothing recorded in the last ${RANGES[range][0]} (history keeps ${data.reach.text}).`));
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
    const word = fmtValue(p.value);
    const cls = /^(on|open|unlocked|heat|cool|auto|opening)$/.test(word) ? 'seg-on' : /^(off|closed|locked|stopped)$/.test(word) ? 'seg-off' : 'seg-other';
    legend.set(word, cls);
    bar.append(
      h('span', {
        class: `seg ${cls}`,
        style: { left: `${((from - data.since) / span) * 100}%`, width: `${Math.max(0.15, ((to - from) / span) * 100)}%` },
        title: `${word}: ${fmtDateTime(new Date(from).toISOString())} – ${fmtDateTime(new Date(to).toISOString())}`,
        dataset: { state: word },
      }),
    );
  });
  const changes = data.points.length;
  summary.textContent = `${changes} changes; now ${fmtValue(all[all.length - 1].value)}.`;
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
            ` ${fmtValue(p.value)}`,
          ),
        ),
    ),
  );
}

function setupHistory() {
  const dlg = $('#history');
  for (const b of dlg.querySelectorAll('[data-range]')) b.addEventListener('click', () => openHistory(dlg.dataset.entity, b.dataset.range));
  $('#history-close').addEventListener('click', () => dlg.close());
}

/** Put the camera's latest frame into img (fetched with the token, shown as a blob: URL). */
function showFrame(id, img, at) {
  let f = state.frames.get(id);
  if (!f) {
    f = { url: null, at: undefined, busy: false, again: false, want: undefined };
    state.frames.set(id, f);
  }
  img.dataset.camera = id;
  if (f.url) img.src = f.url;
  // Only the devices view fetches frames; it re-renders when shown.
  if ((f.url && f.at === at) || state.view !== 'devices') return;
  if (f.busy) {
    f.again = true;
    f.want = at;
    return;
  }
  void refreshFrame(id, at);
}

async function refreshFrame(id, at) {
  const f = state.frames.get(id);
  f.busy = true;
  const imgs = () => document.querySelectorAll(`img.frame[data-camera="${CSS.escape(id)}"]`);
  try {
    const { blob } = await fetchBlob(`/api/devices/${encodeURIComponent(id)}/frame`);
    const old = f.url;
    f.url = URL.createObjectURL(blob);
    f.at = at;
    for (const el of imgs()) el.src = f.url;
    if (old) setTimeout(() => URL.revokeObjectURL(old), 1000);
  } catch (err) {
    for (const el of imgs()) el.alt = `No frame: ${err.message}`;
  } finally {
    // At most one fetch every 2 s per camera.
    await new Promise((r) => setTimeout(r, 2000));
    f.busy = false;
    if (f.again) {
      f.again = false;
      if (f.want !== f.at && state.view === 'devices') void refreshFrame(id, f.want);
    }
  }
}

/** A frame for the chat: its own blob URL, kept with the message. */
async function chatFrame(entityId, container) {
  const e = state.devices.get(entityId);
  const fig = h('figure', { class: 'chat-frame' });
  container.append(fig);
  try {
    const { blob, headers } = await fetchBlob(`/api/devices/${encodeURIComponent(entityId)}/frame`);
    const url = URL.createObjectURL(blob);
    fig.append(
      h('img', { src: url, alt: `Latest frame from ${e?.name ?? entityId}` }),
      h('figcaption', {}, `${e?.name ?? entityId}${headers.get('x-frame-at') ? ` · ${fmtTime(headers.get('x-frame-at'))}` : ''}`),
    );
  } catch (err) {
    fig.append(h('figcaption', {}, `No frame from ${entityId}: ${err.message}`));
  }
}

// ------------------------------------------------------------------ chat

function setupChat() {
  const form = $('#chat-form');
  const input = $('#chat-input');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text || state.turn) return;
    input.value = '';
    void sendPrompt(text);
  });
  $('#stop').addEventListener('click', () => {
    if (state.turn && state.sessionId) void api('POST', `/api/sessions/${encodeURIComponent(state.sessionId)}/interrupt`).catch(() => undefined);
  });
  $('#new-chat').addEventListener('click', async () => {
    if (state.turn) return;
    const id = state.sessionId;
    state.sessionId = null;
    $('#chat-log').replaceChildren(h('p', { class: 'chat-empty' }, 'New conversation.'));
    if (id) await api('DELETE', `/api/sessions/${encodeURIComponent(id)}`).catch(() => undefined);
  });
  const ask = $('#ask-all');
  ask.checked = localStorage.getItem(ASK_KEY) === '1';
  ask.addEventListener('change', () => localStorage.setItem(ASK_KEY, ask.checked ? '1' : '0'));
  setupSpeech();
}

function setupSpeech() {
  // Answers read aloud (speech synthesis), where the browser has it.
  if ('speechSynthesis' in window && typeof SpeechSynthesisUtterance === 'function') {
    $('#speak-label').hidden = false;
    const speak = $('#speak');
    speak.checked = localStorage.getItem(SPEAK_KEY) === '1';
    speak.addEventListener('change', () => {
      localStorage.setItem(SPEAK_KEY, speak.checked ? '1' : '0');
      if (!speak.checked) speechSynthesis.cancel();
    });
  }
  // Push to talk (speech recognition), where the browser has it.
  const Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (!Recognition) return;
  const button = $('#ptt');
  const input = $('#chat-input');
  button.hidden = false;
  let rec = null;
  let heard = '';
  const begin = (ev) => {
    ev.preventDefault();
    if (rec || state.turn) return;
    heard = '';
    rec = new Recognition();
    rec.lang = document.documentElement.lang || navigator.language || 'en-US';
    rec.interimResults = true;
    rec.continuous = true;
    rec.onresult = (e) => {
      let text = '';
      for (let i = 0; i < e.results.length; i++) text += e.results[i][0].transcript;
      heard = text.trim();
      input.value = heard;
    };
    rec.onerror = (e) => {
      if (e.error !== 'aborted' && e.error !== 'no-speech') toast(`Speech recognition: ${e.error}`);
    };
    rec.onend = () => {
      button.classList.remove('listening');
      button.setAttribute('aria-pressed', 'false');
      rec = null;
      if (heard) {
        input.value = '';
        void sendPrompt(heard);
      }
    };
    button.classList.add('listening');
    button.setAttribute('aria-pressed', 'true');
    try {
      rec.start();
    } catch (err) {
      toast(`Cannot listen: ${err.message}`);
      rec = null;
    }
  };
  const end = () => rec?.stop();
  button.addEventListener('pointerdown', begin);
  button.addEventListener('pointerup', end);
  button.addEventListener('pointerleave', end);
  button.addEventListener('pointercancel', end);
  button.addEventListener('keydown', (ev) => {
    if ((ev.key === ' ' || ev.key === 'Enter') && !ev.repeat) begin(ev);
  });
  button.addEventListener('keyup', (ev) => {
    if (ev.key === ' ' || ev.key === 'Enter') end();
  });
}

function speak(text) {
  if (!text || !$('#speak').checked || !('speechSynthesis' in window)) return;
  speechSynthesis.cancel();
  speechSynthesis.speak(new SpeechSynthesisUtterance(text));
}

async function ensureSession() {
  if (state.sessionId) return state.sessionId;
  // permissions 'jan': every action asks here first, so a confirm rule is answered by the Approve button.
  const created = await api('POST', '/api/sessions', { permissions: 'jan' });
  state.sessionId = created.id;
  return created.id;
}

function scrollChat() {
  const log = $('#chat-log');
  log.scrollTop = log.scrollHeight;
}

function setBusy(busy) {
  $('#send').disabled = busy;
  $('#stop').hidden = !busy;
  $('#chat-form').classList.toggle('busy', busy);
}

async function sendPrompt(text, retried = false) {
  const log = $('#chat-log');
  log.querySelector('.chat-empty')?.remove();
  if (!retried) log.append(h('div', { class: 'msg user' }, h('p', {}, text)));
  const msg = h('div', { class: 'msg assistant', 'aria-busy': 'true' });
  log.append(msg);
  scrollChat();
  const turn = { msg, textEl: null, stepText: '', allText: '', cards: new Map(), abort: new AbortController() };
  state.turn = turn;
  setBusy(true);
  try {
    const id = await ensureSession();
    const res = await fetch(`/api/sessions/${encodeURIComponent(id)}/prompt`, {
      method: 'POST',
      headers: authHeaders({ 'content-type': 'application/json', accept: 'text/event-stream' }),
      body: JSON.stringify({ text }),
      signal: turn.abort.signal,
      cache: 'no-store',
    });
    if (!res.ok) {
      let err = {};
      try {
        err = (await res.json()).error ?? {};
      } catch {
        // not JSON
      }
      if (res.status === 404 && !retried) {
        // The session is gone (Hearth restarted): open a new one and try once more.
        state.sessionId = null;
        msg.remove();
        state.turn = null;
        return await sendPrompt(text, true);
      }
      if (res.status === 401) signedOut('Your token was not accepted. Sign in again.');
      throw new Error(err.message ?? `HTTP ${res.status}`);
    }
    await readSse(res, (name, data) => onTurnEvent(turn, name, data));
  } catch (err) {
    if (!turn.abort.signal.aborted) msg.append(h('p', { class: 'error' }, `Error: ${err.message}`));
  } finally {
    msg.removeAttribute('aria-busy');
    if (state.turn === turn) state.turn = null;
    setBusy(false);
    scrollChat();
  }
}

function onTurnEvent(turn, name, ev) {
  switch (name) {
    case 'step':
      turn.stepText = '';
      turn.textEl = null;
      break;
    case 'token':
      if (!turn.textEl) {
        turn.textEl = h('p', { class: 'answer' });
        turn.msg.append(turn.textEl);
      }
      turn.textEl.textContent += ev.text;
      turn.stepText += ev.text;
      turn.allText += ev.text;
      break;
    case 'tool_call_started':
      toolCard(turn, ev.id, ev.name);
      turn.textEl = null;
      break;
    case 'tool_call': {
      const card = toolCard(turn, ev.id, ev.name);
      card.args = ev.args ?? {};
      card.argsEl.textContent = pretty(ev.args ?? {});
      setStatus(card, 'running', 'running');
      turn.textEl = null;
      break;
    }
    case 'permission_request':
      void permissionCard(turn, ev);
      break;
    case 'tool_request': {
      const card = cardFor(turn, ev.tool_name, ev.args);
      if (card) {
        card.requestId = ev.request_id;
        if (card.status === 'asking') setStatus(card, 'running', 'running');
      }
      break;
    }
    case 'tool_request_cancelled':
      for (const card of turn.cards.values()) {
        if (card.requestId === ev.request_id) {
          card.permEl?.remove();
          setStatus(card, 'interrupted', 'cancelled');
        }
      }
      break;
    case 'tool_result': {
      const card = turn.cards.get(ev.id);
      if (!card) break;
      card.resultEl.textContent = ev.content;
      card.permEl?.remove();
      const outcome = outcomeOf(ev.content, ev.is_error);
      setStatus(card, outcome, outcome);
      break;
    }
    case 'tool_details': {
      const card = turn.cards.get(ev.id);
      if (!card) break;
      const d = ev.details ?? {};
      if (typeof d.auditId === 'number') linkAudit(card, d.auditId);
      const entity = typeof d.entity === 'string' ? state.devices.get(d.entity) : undefined;
      if (entity?.kind === 'camera' || (typeof d.entity === 'string' && d.frameAt)) void chatFrame(d.entity, card.el);
      if (typeof d.approvalId === 'string') approvalInline(card, d.approvalId);
      break;
    }
    case 'notice':
      turn.msg.append(h('p', { class: 'notice' }, ev.text));
      break;
    case 'error':
      turn.msg.append(h('p', { class: 'error' }, `${ev.code}: ${ev.message}`));
      break;
    case 'result': {
      if (ev.stopReason === 'interrupted') turn.msg.append(h('p', { class: 'notice' }, 'Stopped.'));
      if (ev.stopReason === 'error' && ev.error) turn.msg.append(h('p', { class: 'error' }, ev.error));
      speak(turn.stepText || turn.allText);
      break;
    }
  }
  scrollChat();
}

/** What a tool's result text says happened (the audit row, when there is one, has the last word). */
function outcomeOf(content, isError) {
  const t = String(content ?? '')
    .trim()
    .toLowerCase();
  if (t.startsWith('confirmed')) return 'confirmed';
  if (t.startsWith('unconfirmed')) return 'unconfirmed';
  if (t.startsWith('not allowed') || t.startsWith('needs approval') || t.startsWith('not done: the person denied')) return 'denied';
  if (t.startsWith('interrupted') || t.startsWith('cancelled')) return 'interrupted';
  if (t.startsWith('still running')) return 'pending';
  return isError ? 'failed' : 'done';
}

function toolCard(turn, id, name) {
  let card = turn.cards.get(id);
  if (card) return card;
  const status = h('span', { class: 'outcome outcome-pending' }, 'preparing');
  const argsEl = h('pre', { class: 'args' }, '');
  const resultEl = h('p', { class: 'result' });
  const linkEl = h('span', { class: 'audit-ref' });
  const el = h(
    'div',
    { class: 'tool-card', dataset: { tool: toolLabel(name), call: id }, role: 'group', 'aria-label': `Tool call ${toolLabel(name)}` },
    h('div', { class: 'tool-head' }, h('span', { class: 'tool-name' }, toolLabel(name)), status, linkEl),
    argsEl,
    resultEl,
  );
  turn.msg.append(el);
  card = { id, name, el, status: 'pending', statusEl: status, argsEl, resultEl, linkEl, args: null };
  turn.cards.set(id, card);
  return card;
}

/** The card of the call a permission request or tool request is about (same tool, not yet answered). */
function cardFor(turn, toolName, args) {
  const name = toolLabel(toolName);
  const sameArgs = (a) => JSON.stringify(a ?? {}) === JSON.stringify(args ?? {});
  const cards = [...turn.cards.values()].filter((c) => toolLabel(c.name) === name && ['pending', 'running', 'asking'].includes(c.status));
  return cards.find((c) => sameArgs(c.args)) ?? cards[cards.length - 1];
}

function setStatus(card, outcome, label) {
  card.status = outcome;
  card.statusEl.className = `outcome outcome-${outcome}`;
  card.statusEl.dataset.outcome = outcome;
  card.statusEl.textContent = label;
  card.el.dataset.outcome = outcome;
}

function linkAudit(card, auditId) {
  card.auditId = auditId;
  card.el.dataset.audit = String(auditId);
  card.linkEl.replaceChildren(h('a', { class: 'audit-link', href: `#audit/${auditId}` }, `audit #${auditId}`));
  if (!state.cardsByAudit.has(auditId)) state.cardsByAudit.set(auditId, []);
  state.cardsByAudit.get(auditId).push(card);
  // The row may already be complete (its event came before the details).
  void api('GET', `/api/audit/${auditId}`)
    .then((row) => applyRowToCards(row))
    .catch(() => undefined);
}

function applyRowToCards(row) {
  for (const card of state.cardsByAudit.get(row.id) ?? []) {
    if (row.outcome !== 'pending') setStatus(card, row.outcome, row.outcome);
  }
}

async function permissionCard(turn, ev) {
  const card = cardFor(turn, ev.tool_name, ev.args) ?? toolCard(turn, `perm-${ev.request_id}`, ev.tool_name);
  if (!card.args) {
    card.args = ev.args;
    card.argsEl.textContent = pretty(ev.args);
  }
  card.requestId = ev.request_id;
  setStatus(card, 'asking', 'asking…');
  const respond = async (decision) => {
    for (const b of card.permEl?.querySelectorAll('button') ?? []) b.disabled = true;
    try {
      await api('POST', `/api/sessions/${encodeURIComponent(state.sessionId)}/permissions/${encodeURIComponent(ev.request_id)}`, { decision });
      card.permEl?.remove();
      if (decision === 'deny') setStatus(card, 'denied', 'denied');
      else setStatus(card, 'running', decision === 'allow_always' ? 'approved (always)' : 'approved');
    } catch (err) {
      toast(`Could not answer: ${err.message}`);
      for (const b of card.permEl?.querySelectorAll('button') ?? []) b.disabled = false;
    }
  };
  // What would the policy say? An action it simply allows needs no click (as `hearth chat` does),
  // unless the person asked to approve everything.
  let decision;
  try {
    decision = (await api('POST', '/api/policy/test', { tool: toolLabel(ev.tool_name), args: ev.args })).decision;
  } catch {
    decision = undefined;
  }
  if (decision?.effect === 'allow' && !$('#ask-all').checked) {
    card.el.dataset.auto = 'allowed';
    await respond('allow_once');
    return;
  }
  const why =
    decision?.effect === 'confirm'
      ? `Needs your confirmation: ${decision.reason}.`
      : decision?.effect === 'deny'
        ? `The policy will refuse this: ${decision.reason}.`
        : 'Hearth asks before it acts.';
  card.permEl = h(
    'div',
    { class: 'permission', role: 'group', 'aria-label': `Approve ${toolLabel(ev.tool_name)}?` },
    h('p', {}, h('strong', {}, `Allow ${toolLabel(ev.tool_name)} `), h('code', {}, JSON.stringify(ev.args)), '?'),
    h('p', { class: 'muted' }, why),
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'button', class: 'primary approve', onclick: () => respond('allow_once') }, 'Approve'),
      h('button', { type: 'button', class: 'deny', onclick: () => respond('deny') }, 'Deny'),
      ev.offers_always && decision?.effect !== 'confirm'
        ? h('button', { type: 'button', class: 'link', onclick: () => respond('allow_always') }, `Always allow ${toolLabel(ev.tool_name)}`)
        : null,
    ),
  );
  card.el.append(card.permEl);
  card.permEl.querySelector('button.approve').focus({ preventScroll: true });
  scrollChat();
}

/** A call held by a confirm rule outside this chat's permissions: decide its approval here. */
function approvalInline(card, approvalId) {
  const box = h('div', { class: 'permission', dataset: { approval: approvalId } });
  const decide = async (decision) => {
    for (const b of box.querySelectorAll('button')) b.disabled = true;
    try {
      const a = await api('POST', `/api/approvals/${encodeURIComponent(approvalId)}`, { decision });
      state.approvals.set(a.id, a);
      renderApprovals();
      box.replaceChildren(h('p', {}, decision === 'grant' ? 'Granted: ask again to make the call.' : 'Denied.'));
    } catch (err) {
      box.replaceChildren(h('p', { class: 'error' }, err.message));
    }
  };
  box.append(
    h('p', {}, `Approval ${approvalId} is waiting.`),
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'button', class: 'primary approve', onclick: () => decide('grant') }, 'Approve'),
      h('button', { type: 'button', class: 'deny', onclick: () => decide('deny') }, 'Deny'),
    ),
  );
  card.el.append(box);
}

// ------------------------------------------------------------------ approvals

async function refreshApprovals() {
  try {
    const list = await api('GET', '/api/approvals?status=all&limit=50');
    for (const a of list) state.approvals.set(a.id, a);
    renderApprovals();
  } catch {
    // shown elsewhere
  }
}

function renderApprovals() {
  const all = [...state.approvals.values()].sort((a, b) => (b.createdAt > a.createdAt ? 1 : -1));
  const now = Date.now();
  const pending = all.filter((a) => a.status === 'pending' && Date.parse(a.expiresAt) > now);
  const done = all.filter((a) => !pending.includes(a)).slice(0, 20);
  const badge = $('#approvals-badge');
  badge.hidden = pending.length === 0;
  badge.textContent = String(pending.length);
  $('#approvals-pending').replaceChildren(...(pending.length ? pending.map(approvalCard) : [h('p', { class: 'muted' }, 'Nothing is waiting for approval.')]));
  $('#approvals-done').replaceChildren(...(done.length ? done.map(approvalCard) : [h('p', { class: 'muted' }, 'None yet.')]));
}

/** "Unlock Front door lock": what a held call would do, in words, when the page knows the device. */
function approvalWords(a) {
  const id = typeof a.args?.entity === 'string' ? a.args.entity : [...state.controls].find(([, c]) => c.tool === toolLabel(a.tool))?.[0];
  const e = id ? state.devices.get(id) : undefined;
  const action = String(a.args?.action ?? a.args?.option ?? 'use').replace(/_/g, ' ');
  return e ? `${action.charAt(0).toUpperCase()}${action.slice(1)} ${e.name}` : toolLabel(a.tool);
}

function approvalCard(a) {
  const pending = a.status === 'pending';
  const el = h(
    'article',
    { class: `card approval status-${a.status}`, dataset: { approval: a.id }, 'aria-label': `Approval: ${approvalWords(a)}, ${a.status}` },
    h('header', {}, h('strong', {}, approvalWords(a)), ' ', h('span', { class: `outcome approval-${a.status}` }, a.status)),
    h('pre', { class: 'args' }, pretty(a.args)),
    h(
      'p',
      { class: 'muted' },
      h('code', {}, toolLabel(a.tool)),
      ` · ${a.principal} · `,
      relTime(a.createdAt),
      pending ? ` · expires ${fmtTime(a.expiresAt)}` : a.decidedBy ? ` · by ${a.decidedBy}` : '',
    ),
    h('p', { class: 'reason' }, a.reason),
  );
  if (pending) {
    const decide = async (decision) => {
      for (const b of el.querySelectorAll('button')) b.disabled = true;
      try {
        const updated = await api('POST', `/api/approvals/${encodeURIComponent(a.id)}`, { decision });
        state.approvals.set(updated.id, updated);
        renderApprovals();
      } catch (err) {
        toast(err.message);
        for (const b of el.querySelectorAll('button')) b.disabled = false;
      }
    };
    el.append(
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'button', class: 'primary approve', onclick: () => decide('grant') }, 'Approve'),
        h('button', { type: 'button', class: 'deny', onclick: () => decide('deny') }, 'Deny'),
      ),
    );
  }
  return el;
}

// ------------------------------------------------------------------ audit

function setupAudit() {
  const form = $('#audit-filters');
  // Filters live in the address (#audit?outcome=denied&entity=...): a reload or a shared link keeps them.
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = auditQuery();
    const target = `#audit${q.size ? `?${q}` : ''}`;
    if (location.hash !== target) location.hash = target;
    else void loadAudit();
  });
  form.addEventListener('reset', () => setTimeout(() => (location.hash = '#audit'), 0));
  $('#audit-more').addEventListener('click', () => void loadAudit({ older: true }));
  $('#export-jsonl').addEventListener('click', () => void exportAudit('jsonl'));
  $('#export-csv').addEventListener('click', () => void exportAudit('csv'));
}

function auditQuery() {
  const form = $('#audit-filters');
  const q = new URLSearchParams();
  for (const name of ['principal', 'entity', 'outcome']) {
    const v = form.elements[name].value.trim();
    if (v) q.set(name, v);
  }
  for (const name of ['since', 'until']) {
    const v = form.elements[name].value;
    if (v) q.set(name, new Date(v).toISOString());
  }
  return q;
}

let auditFilterKey = null;
/** Put the address's filters into the form; a change of filters reloads the rows. */
function fillAuditFilters(q) {
  const form = $('#audit-filters');
  for (const name of ['principal', 'entity', 'outcome']) form.elements[name].value = q.get(name) ?? '';
  for (const name of ['since', 'until']) {
    const v = q.get(name);
    const d = v ? new Date(v) : null;
    form.elements[name].value = d && !Number.isNaN(d.getTime()) ? new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16) : '';
  }
  const key = auditQuery().toString();
  if (auditFilterKey !== null && key !== auditFilterKey) state.audit.loaded = false;
  auditFilterKey = key;
}

/** The address of the audit view (a row's, when given) with the filters kept. */
function auditHash(id) {
  const q = auditQuery();
  return `#audit${id ? `/${id}` : ''}${q.size ? `?${q}` : ''}`;
}

/** The badge a row deserves: a call held for approval is waiting, not denied. */
function rowOutcome(r) {
  if (r.outcome === 'denied' && r.decision === 'confirm') return 'waiting';
  return r.outcome;
}

function rowMatches(row, q) {
  if (q.get('principal') && row.principal !== q.get('principal')) return false;
  if (q.get('entity') && row.entityId !== q.get('entity')) return false;
  if (q.get('outcome') && row.outcome !== q.get('outcome')) return false;
  if (q.get('since') && row.at < q.get('since')) return false;
  if (q.get('until') && row.at >= q.get('until')) return false;
  return true;
}

async function showAudit(id) {
  if (!state.audit.loaded) await loadAudit();
  else void verifyAudit();
  if (id) await showAuditRow(id);
  else $('#audit-detail').hidden = true;
}

async function loadAudit({ older = false } = {}) {
  const q = auditQuery();
  q.set('limit', '50');
  q.set('order', 'desc');
  if (older && state.audit.oldest) q.set('beforeId', String(state.audit.oldest));
  const body = $('#audit-rows');
  try {
    const rows = await api('GET', `/api/audit?${q}`);
    if (!older) {
      body.replaceChildren();
      state.audit.rows.clear();
    }
    for (const r of rows) {
      state.audit.rows.set(r.id, r);
      body.append(auditRow(r));
    }
    state.audit.oldest = rows.length ? rows[rows.length - 1].id : state.audit.oldest;
    state.audit.loaded = true;
    $('#audit-more').hidden = rows.length < 50;
    $('#audit-empty').hidden = state.audit.rows.size > 0;
    const principals = new Set([...state.audit.rows.values()].map((r) => r.principal));
    if (state.principal) principals.add(state.principal);
    $('#principal-list').replaceChildren(...[...principals].sort().map((p) => h('option', { value: p })));
  } catch (err) {
    if (err.status !== 401) toast(`Could not load the audit log: ${err.message}`);
  }
  void verifyAudit();
}

let verifyTimer;
function scheduleVerify() {
  clearTimeout(verifyTimer);
  verifyTimer = setTimeout(() => void verifyAudit(), 800);
}

async function verifyAudit() {
  const el = $('#verify-status');
  try {
    const v = await api('GET', '/api/audit/verify');
    el.replaceChildren();
    if (v.ok) {
      el.className = 'verify ok';
      el.append(`✔ Chain verified${typeof v.rows === 'number' ? `: ${v.rows} rows${v.pending ? ` (${v.pending} pending)` : ''}` : ''}`);
    } else {
      el.className = 'verify broken';
      el.append(`✖ Chain BROKEN${v.firstBroken ? ` at row ${v.firstBroken.id} (${v.firstBroken.kind}): ${v.firstBroken.reason}` : ''}`);
    }
  } catch (err) {
    el.className = 'verify';
    el.textContent = `Chain not checked: ${err.message}`;
  }
}

function auditRow(r) {
  const e = r.entityId ? state.devices.get(r.entityId) : undefined;
  const outcome = rowOutcome(r);
  const tr = h(
    'tr',
    {
      dataset: { id: String(r.id), outcome, entity: r.entityId ?? '' },
      tabindex: '0',
      'aria-label': `Audit row ${r.id}, ${fmtDateTime(r.at)}: ${r.principal} ${r.action} ${e?.name ?? r.entityId ?? r.tool}, ${outcome}`,
    },
    h('td', { 'data-label': '#', class: 'c-id' }, h('a', { href: auditHash(r.id) }, String(r.id))),
    h('td', { 'data-label': 'Time', class: 'c-time' }, h('time', { datetime: r.at, title: fmtDateTime(r.at) }, fmtDateTime(r.at))),
    h('td', { 'data-label': 'Principal', class: 'c-who' }, r.principal),
    h('td', { 'data-label': 'Tool', class: 'c-tool' }, r.tool),
    h('td', { 'data-label': 'Entity', class: 'c-entity', title: r.entityId ?? '' }, e?.name ?? r.entityId ?? ''),
    h('td', { 'data-label': 'Action', class: 'c-action' }, r.action.replace(/_/g, ' ')),
    h('td', { 'data-label': 'Outcome', class: 'c-outcome' }, outcomeBadge(outcome)),
    h('td', { 'data-label': 'Decision', class: 'c-decision' }, `${r.decision}${r.ruleId !== null ? ` (#${r.ruleId})` : ''}`),
  );
  const open = () => {
    location.hash = auditHash(r.id);
  };
  tr.addEventListener('click', (ev) => {
    if (ev.target.closest('a')) return;
    open();
  });
  tr.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') open();
  });
  return tr;
}

async function showAuditRow(id) {
  const box = $('#audit-detail');
  for (const tr of document.querySelectorAll('#audit-rows tr.selected')) tr.classList.remove('selected');
  document.querySelector(`#audit-rows tr[data-id="${id}"]`)?.classList.add('selected');
  let row;
  try {
    row = await api('GET', `/api/audit/${id}`);
  } catch (err) {
    box.hidden = false;
    box.replaceChildren(h('p', { class: 'error' }, `Audit row ${id}: ${err.message}`));
    return;
  }
  const field = (label, value, cls) => [h('dt', {}, label), h('dd', { class: cls }, value ?? '—')];
  box.hidden = false;
  box.replaceChildren(
    h(
      'header',
      {},
      h('h3', {}, `Audit row #${row.id}`),
      outcomeBadge(rowOutcome(row)),
      h('a', { href: auditHash(), class: 'close', 'aria-label': 'Close the row' }, '×'),
    ),
    h(
      'dl',
      {},
      field('Time', `${fmtDateTime(row.at)}${row.completedAt ? ` → ${fmtDateTime(row.completedAt)}` : ''}`),
      field('Principal', row.principal),
      field('Session', row.session),
      field('Tool', row.tool),
      field('Entity', row.entityId ? (state.devices.get(row.entityId) ? `${state.devices.get(row.entityId).name} (${row.entityId})` : row.entityId) : null),
      field('Action', row.action),
      field('Arguments', h('pre', {}, pretty(row.args))),
      field('Decision', `${row.decision}${row.ruleId !== null ? ` by rule #${row.ruleId}` : ''}`),
      field('Reason', row.reason),
      field('Error', row.error),
      field('Latency', row.latencyMs !== null ? `${row.latencyMs} ms` : null),
      field('Echo', row.echo, 'mono'),
      field('Request', row.requestId, 'mono'),
    ),
    // The chain proof: this row's hash covers the previous row's, so a changed or missing row breaks every later link.
    h(
      'details',
      { class: 'proof', open: true },
      h('summary', {}, 'Chain proof'),
      h(
        'dl',
        {},
        field('Previous hash', row.prevHash, 'mono'),
        field('Row hash', row.hash, 'mono'),
        row.doneHash ? field('Outcome hash', row.doneHash, 'mono') : [],
        field('Chain', $('#verify-status').textContent),
      ),
      h('p', { class: 'muted' }, 'Check it yourself: ', h('code', {}, 'hearth audit verify')),
    ),
  );
  box.focus({ preventScroll: true });
  box.scrollIntoView({ block: 'nearest' });
}

function onAuditRow(row) {
  applyRowToCards(row);
  // A granted approval is used up by the call it was for: that raises no approval event, but an audit row.
  if ([...state.approvals.values()].some((a) => a.status === 'granted' && row.reason.includes(a.id))) void refreshApprovals();
  if (!state.audit.loaded) return;
  const q = auditQuery();
  const body = $('#audit-rows');
  const existing = body.querySelector(`tr[data-id="${row.id}"]`);
  if (existing) {
    state.audit.rows.set(row.id, row);
    existing.replaceWith(auditRow(row));
  } else if (rowMatches(row, q)) {
    state.audit.rows.set(row.id, row);
    body.prepend(auditRow(row));
    $('#audit-empty').hidden = true;
  }
  if (state.view === 'audit') scheduleVerify();
}

async function exportAudit(format) {
  const q = new URLSearchParams({ format });
  const cur = auditQuery();
  for (const k of ['since', 'until']) if (cur.get(k)) q.set(k, cur.get(k));
  try {
    const res = await fetch(`/api/audit/export?${q}`, { headers: authHeaders(), cache: 'no-store' });
    if (!res.ok) {
      let message = `HTTP ${res.status}`;
      try {
        message = (await res.json()).error.message;
      } catch {
        // not JSON
      }
      throw new Error(message);
    }
    const blob = await res.blob();
    const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `hearth-audit.${format}`;
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    toast(`Export failed: ${err.message}`);
  }
}

// ------------------------------------------------------------------ policy

function setupPolicy() {
  const form = $('#policy-test');
  form.elements.tool.addEventListener('change', () => {
    const tool = state.tools?.find((t) => t.name === form.elements.tool.value);
    const args = {};
    if (tool?.entities.length > 1) args[tool.capability === 'read' && tool.name.includes('camera') ? 'camera' : 'entity'] = tool.entities[0];
    if (tool?.actions.length) args.action = tool.actions[0];
    form.elements.args.value = JSON.stringify(args);
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void testPolicy();
  });
}

const EFFECT_RANK = { deny: 0, confirm: 1, allow: 2 };

async function loadPolicy() {
  if (state.policyLoaded) return;
  const form = $('#policy-test');
  if (!form.elements.principal.value && state.principal) form.elements.principal.value = state.principal;
  try {
    const p = await api('GET', '/api/policy/rules');
    state.policyLoaded = true;
    state.tools = p.tools;
    const rules = [...p.rules].sort((a, b) => b.priority - a.priority || EFFECT_RANK[a.effect] - EFFECT_RANK[b.effect] || a.id - b.id);
    $('#policy-add').hidden = false;
    $('#policy-rules').replaceChildren(
      ...rules.map((r, i) =>
        h(
          'tr',
          { dataset: { rule: String(r.id) } },
          h('td', { 'data-label': '#' }, String(r.id)),
          h('td', { 'data-label': 'Effect' }, h('span', { class: `effect effect-${r.effect}` }, r.effect)),
          h('td', { 'data-label': 'Priority' }, String(r.priority)),
          h('td', { 'data-label': 'Rule' }, r.description),
          h('td', { 'data-label': 'Note' }, r.builtin && !/^built-in/.test(r.note ?? '') ? `${r.note ? `${r.note} · ` : ''}built-in` : (r.note ?? '')),
          h('td', { 'data-label': 'CLI' }, h('code', { class: 'cli' }, r.command ?? '')),
          h(
            'td',
            { 'data-label': 'Change', class: 'rule-actions' },
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': `Move rule ${r.id} up (raise its priority)`,
                disabled: i === 0,
                onclick: () => moveRule(r, rules[i - 1], +1),
              },
              '↑',
            ),
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': `Move rule ${r.id} down (lower its priority)`,
                disabled: i === rules.length - 1,
                onclick: () => moveRule(r, rules[i + 1], -1),
              },
              '↓',
            ),
            h(
              'button',
              { type: 'button', class: 'small deny', 'aria-label': `Remove rule ${r.id}`, dataset: { remove: String(r.id) }, onclick: () => removeRule(r) },
              'Remove',
            ),
          ),
        ),
      ),
    );
    const list = $('#principal-list');
    const have = new Set([...list.options].map((o) => o.value));
    for (const pr of p.principals) if (!have.has(pr.id)) list.append(h('option', { value: pr.id }, pr.roles.join(', ')));
    fillTools(p.tools);
  } catch (err) {
    const msg = $('#policy-message');
    msg.hidden = false;
    msg.textContent = err.status === 403 ? 'Only an owner may read the rules; you can still test your own calls.' : `Could not load the policy: ${err.message}`;
    if (err.status === 403) {
      // A non-owner tests its own calls, with the tools of a chat session.
      form.elements.principal.readOnly = true;
      try {
        const id = await ensureSession();
        const s = await api('GET', `/api/sessions/${encodeURIComponent(id)}`);
        fillTools(s.tools.map((name) => ({ name: toolLabel(name), capability: '', entities: [], actions: [] })));
        state.policyLoaded = true;
      } catch {
        // nothing to offer
      }
    }
  }
}

/** Past the neighbour: one above its priority (up) or one below (down). */
async function moveRule(rule, neighbour, dir) {
  const priority = dir > 0 ? Math.max(rule.priority + 1, neighbour.priority + 1) : Math.min(rule.priority - 1, neighbour.priority - 1);
  try {
    await api('POST', `/api/policy/rules/${rule.id}/priority`, { priority });
    toast(`Rule #${rule.id} now has priority ${priority}`);
  } catch (err) {
    toast(`Could not move rule #${rule.id}: ${err.message}`);
  }
  reloadPolicy();
}

async function removeRule(rule) {
  if (!confirm(`Remove rule #${rule.id}: ${rule.description}?\n(the same as: hearth policy remove ${rule.id})`)) return;
  try {
    await api('DELETE', `/api/policy/rules/${rule.id}`);
    toast(`Removed rule #${rule.id}. To add it again: ${rule.command}`);
  } catch (err) {
    toast(`Could not remove rule #${rule.id}: ${err.message}`);
  }
  reloadPolicy();
}

function reloadPolicy() {
  state.policyLoaded = false;
  void loadPolicy();
  // What this owner may do may have changed too: the cards follow.
  void loadControls().then(renderDevices);
}

const TARGET_FLAG = { tool: '--tool', entity: '--entity', area: '--area', kind: '--kind', device_class: '--device-class', capability: '--capability' };
const shq = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** The add form as a rule body, and the CLI command that would add the same rule. */
function policyForm() {
  const f = $('#policy-add').elements;
  const body = {
    effect: f.effect.value,
    subject: f.subject.value.trim(),
    targetType: f.targetType.value,
    action: f.action.value.trim() || '*',
    priority: Number(f.priority.value || 0),
  };
  if (body.targetType !== 'any') body.target = f.target.value.trim();
  if (f.note.value.trim()) body.note = f.note.value.trim();
  const parts = ['hearth', 'policy', body.effect, shq(body.subject || '<subject>')];
  if (body.targetType !== 'any') parts.push(TARGET_FLAG[body.targetType], shq(body.target || '<target>'));
  if (body.action !== '*') parts.push('--action', shq(body.action));
  if (body.priority) parts.push('--priority', String(body.priority));
  if (body.note) parts.push('--note', shq(body.note));
  return { body, command: parts.join(' ') };
}

function setupPolicyEdit() {
  const form = $('#policy-add');
  const preview = () => ($('#policy-add-cli').textContent = policyForm().command);
  form.addEventListener('input', preview);
  form.addEventListener('change', preview);
  preview();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const err = $('#policy-add-error');
    err.textContent = '';
    try {
      const r = await api('POST', '/api/policy/rules', policyForm().body);
      toast(`Added rule #${r.id}: ${r.description}`);
      form.elements.note.value = '';
      reloadPolicy();
    } catch (e) {
      err.textContent = e.message;
    }
  });
}

function fillTools(tools) {
  state.tools = tools;
  const select = $('#policy-test').elements.tool;
  select.replaceChildren(...tools.map((t) => h('option', { value: t.name }, `${t.name}${t.capability ? ` (${t.capability})` : ''}`)));
  select.dispatchEvent(new Event('change'));
}

async function testPolicy() {
  const form = $('#policy-test');
  const out = $('#policy-result');
  let args;
  try {
    args = JSON.parse(form.elements.args.value || '{}');
  } catch (err) {
    out.replaceChildren(h('p', { class: 'error' }, `The arguments are not JSON: ${err.message}`));
    return;
  }
  const body = { tool: form.elements.tool.value, args };
  const who = form.elements.principal.value.trim();
  if (who) body.principal = who;
  if (form.elements.at.value) body.at = new Date(form.elements.at.value).toISOString();
  try {
    const r = await api('POST', '/api/policy/test', body);
    out.replaceChildren(
      h(
        'p',
        { class: 'decision' },
        h('span', { class: `effect effect-${r.decision.effect}` }, r.decision.effect),
        ` ${r.principal.id} (roles: ${r.principal.roles.join(', ') || 'none'}) → ${r.tool} ${r.action}${r.entityId ? ` on ${r.entityId}` : ''}: ${r.decision.reason}`,
      ),
      r.rules
        ? h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'rules-table considered' },
              h('caption', { class: 'sr-only' }, 'Rules considered'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  h('th', { scope: 'col' }, '#'),
                  h('th', { scope: 'col' }, 'Effect'),
                  h('th', { scope: 'col' }, 'Rule'),
                  h('th', { scope: 'col' }, 'Why'),
                ),
              ),
              h(
                'tbody',
                {},
                r.rules.map((c) =>
                  h(
                    'tr',
                    { class: c.decided ? 'decided' : c.matched ? 'matched' : 'unmatched' },
                    h('td', { 'data-label': '#' }, String(c.id)),
                    h('td', { 'data-label': 'Effect' }, h('span', { class: `effect effect-${c.effect}` }, c.effect)),
                    h('td', { 'data-label': 'Rule' }, c.description),
                    h('td', { 'data-label': 'Why' }, c.why),
                  ),
                ),
              ),
            ),
          )
        : null,
    );
  } catch (err) {
    out.replaceChildren(h('p', { class: 'error' }, err.message));
  }
}

// ------------------------------------------------------------------ go

void boot();
