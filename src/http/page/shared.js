// What every view of the page uses: its state, building elements, values as
// text, the toast, and the HTTP API with the token.
export const TOKEN_KEY = 'hearth.token';
export const SPEAK_KEY = 'hearth.speak';
export const ASK_KEY = 'hearth.askAll';
export const VIEWS = ['chat', 'devices', 'areas', 'approvals', 'audit', 'policy'];

export const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  authOff: false,
  principal: null,
  owner: null,
  /** id -> entity (the /api/devices shape, kept live by state events). */
  devices: new Map(),
  devicesLoaded: false,
  /** The home as people arrange it (GET /api/home/*): device id -> device, areas, floors. */
  home: { devices: new Map(), areas: [], floors: [], loaded: false },
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
  /** sensor id -> {values, at, loading}: the last 24 h for its card's sparkline. */
  sparks: new Map(),
  /** permission request id -> a question the chat is asking (shown on the Approvals tab too). */
  chatAsks: new Map(),
  /** approval id -> the held control call waiting for it. */
  waiting: new Map(),
  /** The entity whose slider is being dragged (its card is not redrawn under the finger). */
  dragging: null,
  uplot: null,
};

// ------------------------------------------------------------------ helpers

export const $ = (sel, root = document) => root.querySelector(sel);

/** Build an element: h('p', {class: 'x', onclick}, 'text', child). Strings become text nodes. */
export function h(tag, attrs = {}, ...children) {
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

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

export function fmtValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  return String(v);
}

export function pretty(obj) {
  try {
    return JSON.stringify(obj, null, 2);
  } catch {
    return String(obj);
  }
}

export function toolLabel(name) {
  return String(name ?? '').replace(/^host__/, '');
}

let toastTimer;
/** A short message at the bottom; `about` ties it to something (an approval) so it can be taken back. */
export function toast(message, about = null) {
  const el = $('#toast');
  el.textContent = message;
  el.dataset.about = about ?? '';
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), 6000);
}

export function untoast(about) {
  const el = $('#toast');
  if (!el.hidden && el.dataset.about === about) el.hidden = true;
}

/** An Approve and a Deny button in a row (and any extra after them). */
export function decisionButtons(approve, deny, ...extra) {
  return h(
    'div',
    { class: 'buttons' },
    h('button', { type: 'button', class: 'primary approve', onclick: approve }, 'Approve'),
    h('button', { type: 'button', class: 'deny', onclick: deny }, 'Deny'),
    ...extra,
  );
}

export function outcomeBadge(outcome) {
  const title = outcome === 'held' ? 'held by a confirm rule: nothing was sent; waiting for approval' : undefined;
  return h('span', { class: `outcome outcome-${outcome}`, dataset: { outcome }, ...(title ? { title } : {}) }, outcome);
}

// ------------------------------------------------------------------ API

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function authHeaders(extra = {}) {
  const headers = { ...extra };
  if (state.token) headers.authorization = `Bearer ${state.token}`;
  return headers;
}

export async function api(method, path, body, { signal, quiet401 = false } = {}) {
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
export async function readSse(res, onEvent) {
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
export async function fetchBlob(path) {
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

export function showOnly(id) {
  for (const el of ['loading', 'login', 'app']) $(`#${el}`).hidden = el !== id;
}

// The sign-in token lives in this tab's sessionStorage (gone with the tab, never written to disk) and is
// shared with the page's other open tabs over a BroadcastChannel: a new tab asks and a signed-in tab
// answers; signing in at one tab signs in the tabs waiting at the form; signing out (or a token the
// server no longer takes) signs out every tab that uses that token.
const tabs = typeof BroadcastChannel === 'function' ? new BroadcastChannel('hearth.signin') : null;

/** Keep the token for this tab and give it to the tabs waiting at the sign-in form. */
export function keepToken(token) {
  state.token = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  tabs?.postMessage({ type: 'token', token });
}

/** The token of another open tab of this page, or null when none answers soon. */
export function tokenFromOtherTabs(ms = 500) {
  if (!tabs) return Promise.resolve(null);
  return new Promise((resolve) => {
    const done = (token) => {
      clearTimeout(timer);
      tabs.removeEventListener('message', on);
      resolve(token);
    };
    const on = (ev) => {
      if (ev.data?.type === 'token' && typeof ev.data.token === 'string') done(ev.data.token);
    };
    const timer = setTimeout(() => done(null), ms);
    tabs.addEventListener('message', on);
    tabs.postMessage({ type: 'ask' });
  });
}

/** Answer other tabs' asks, sign out with them, and call onToken(token) when one signs in while this one shows the form. */
export function listenToOtherTabs(onToken) {
  tabs?.addEventListener('message', (ev) => {
    const m = ev.data ?? {};
    if (m.type === 'ask' && state.token) tabs.postMessage({ type: 'token', token: state.token });
    else if (m.type === 'token' && !state.token && !$('#login').hidden && typeof m.token === 'string') onToken(m.token);
    else if (m.type === 'signout' && state.token && m.token === state.token) signedOut('Signed out in another tab.', false);
  });
}

/** `tell`: the other tabs on the same token sign out too. */
export function signedOut(message, tell = true) {
  if (tell && state.token) tabs?.postMessage({ type: 'signout', token: state.token });
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

// ------------------------------------------------------------------ values people read

/** "3 min ago" (the exact date and time go in the title). */
export function fmtAgo(iso) {
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
export function fmtDateTime(iso) {
  if (!iso) return '';
  return new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'medium' });
}

/** A <time> that reads as "3 min ago" with the full date on hover; kept fresh by a timer. */
export function relTime(iso) {
  return h('time', { datetime: iso, title: fmtDateTime(iso), dataset: { rel: iso } }, fmtAgo(iso));
}

setInterval(() => {
  for (const t of document.querySelectorAll('time[data-rel]')) t.textContent = fmtAgo(t.dataset.rel);
}, 15_000);
