// Hearth's web page: chat (typed or spoken), live devices, approvals, the
// audit log and the policy. Plain JavaScript, no build step, no outside
// resources. Everything goes through the same HTTP API as any other client,
// with the token in an Authorization header (so no cookies, no CSRF); text
// from the home is only ever set as textContent.

const TOKEN_KEY = 'hearth.token';
const SPEAK_KEY = 'hearth.speak';
const ASK_KEY = 'hearth.askAll';
const VIEWS = ['chat', 'devices', 'approvals', 'audit', 'policy'];
const OUTCOMES = ['confirmed', 'unconfirmed', 'denied', 'failed', 'not_sent', 'interrupted', 'pending'];

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
    error.textContent = err.status === 401 ? 'That token was not accepted: check it, or make a new one with hearth token create.' : `Cannot sign in: ${err.message}`;
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
  const [name, arg] = location.hash.replace(/^#/, '').split('/');
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
      renderApprovals();
      if (data.event === 'requested' && data.status === 'pending' && state.view !== 'approvals') {
        toast(`Approval needed: ${data.tool} ${JSON.stringify(data.args)} (see Approvals)`, data.id);
      } else if (data.status !== 'pending') {
        untoast(data.id);
      }
      break;
  }
}

// ------------------------------------------------------------------ devices

async function loadDevices() {
  try {
    const list = await api('GET', '/api/devices');
    for (const e of list) {
      const known = state.devices.get(e.id);
      // A state event may have overtaken the snapshot: keep the newer.
      if (known && known.updatedAt && e.updatedAt && known.updatedAt > e.updatedAt) continue;
      state.devices.set(e.id, { ...known, ...e });
    }
    state.devicesLoaded = true;
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
  const card = document.querySelector(`.entity[data-entity="${CSS.escape(s.id)}"]`);
  if (card) card.replaceWith(entityCard(merged));
  else renderDevices();
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
        h('div', { class: 'entities' }, areas.get(area).sort((a, b) => a.name.localeCompare(b.name)).map(entityCard)),
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

function entityCard(e) {
  const attrs = Object.entries(e.attributes ?? {});
  const isCamera = e.kind === 'camera';
  const withUnit = (v) => `${fmtValue(v)}${e.unit && typeof v === 'number' ? ` ${e.unit}` : ''}`;
  const value = isCamera ? (e.frame ? `${e.frame.contentType} frame` : 'no frame yet') : withUnit(e.value);
  const card = h(
    'article',
    { class: `entity kind-${e.kind}${e.available === false ? ' is-offline' : ''}`, dataset: { entity: e.id } },
    h('header', {}, h('h4', {}, e.name), availability(e)),
    h('p', { class: 'value', dataset: { value: isCamera ? '' : String(e.value ?? '') } }, value),
    attrs.length ? h('dl', { class: 'attrs' }, attrs.flatMap(([k, v]) => [h('dt', {}, k.replace(/_/g, ' ')), h('dd', {}, /temperature/.test(k) ? withUnit(v) : fmtValue(v))])) : null,
    h('p', { class: 'meta' }, `${e.kind.replace(/_/g, ' ')}${e.deviceClass ? ` · ${e.deviceClass}` : ''} · `, h('code', {}, e.id), e.updatedAt ? ` · ${fmtTime(e.updatedAt)}` : ''),
  );
  if (isCamera) {
    const img = h('img', { class: 'frame', alt: `Latest frame from ${e.name}`, width: 320, height: 180 });
    card.append(img);
    showFrame(e.id, img, e.updatedAt);
  }
  return card;
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
  const t = String(content ?? '').trim().toLowerCase();
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

function approvalCard(a) {
  const pending = a.status === 'pending';
  const el = h(
    'article',
    { class: `card approval status-${a.status}`, dataset: { approval: a.id } },
    h('header', {}, h('strong', {}, a.tool), ' ', h('span', { class: `outcome approval-${a.status}` }, a.status)),
    h('pre', { class: 'args' }, pretty(a.args)),
    h('p', { class: 'muted' }, `${a.principal} · ${fmtTime(a.createdAt)}${pending ? ` · expires ${fmtTime(a.expiresAt)}` : a.decidedBy ? ` · by ${a.decidedBy}` : ''}`),
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
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void loadAudit();
  });
  form.addEventListener('reset', () => setTimeout(() => void loadAudit(), 0));
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
  const tr = h(
    'tr',
    { dataset: { id: String(r.id), outcome: r.outcome, entity: r.entityId ?? '' }, tabindex: '0', 'aria-label': `Audit row ${r.id}: ${r.tool} ${r.action} ${r.outcome}` },
    h('td', { 'data-label': '#' }, h('a', { href: `#audit/${r.id}` }, String(r.id))),
    h('td', { 'data-label': 'Time' }, fmtTime(r.at)),
    h('td', { 'data-label': 'Principal' }, r.principal),
    h('td', { 'data-label': 'Tool' }, r.tool),
    h('td', { 'data-label': 'Entity' }, r.entityId ?? ''),
    h('td', { 'data-label': 'Action' }, r.action),
    h('td', { 'data-label': 'Outcome' }, outcomeBadge(r.outcome)),
    h('td', { 'data-label': 'Decision' }, `${r.decision}${r.ruleId !== null ? ` (#${r.ruleId})` : ''}`),
  );
  const open = () => {
    location.hash = `#audit/${r.id}`;
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
    h('header', {}, h('h3', {}, `Audit row #${row.id}`), outcomeBadge(row.outcome), h('a', { href: '#audit', class: 'close', 'aria-label': 'Close the row' }, '×')),
    h(
      'dl',
      {},
      field('Time', `${fmtTime(row.at)}${row.completedAt ? ` → ${fmtTime(row.completedAt)}` : ''}`),
      field('Principal', row.principal),
      field('Session', row.session),
      field('Tool', row.tool),
      field('Entity', row.entityId),
      field('Action', row.action),
      field('Arguments', h('pre', {}, pretty(row.args))),
      field('Decision', `${row.decision}${row.ruleId !== null ? ` by rule #${row.ruleId}` : ''}`),
      field('Reason', row.reason),
      field('Error', row.error),
      field('Latency', row.latencyMs !== null ? `${row.latencyMs} ms` : null),
      field('Echo', row.echo, 'mono'),
      field('Request', row.requestId, 'mono'),
      field('Hash', row.hash, 'mono'),
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
    $('#policy-rules').replaceChildren(
      ...rules.map((r) =>
        h(
          'tr',
          { dataset: { rule: String(r.id) } },
          h('td', { 'data-label': '#' }, String(r.id)),
          h('td', { 'data-label': 'Effect' }, h('span', { class: `effect effect-${r.effect}` }, r.effect)),
          h('td', { 'data-label': 'Priority' }, String(r.priority)),
          h('td', { 'data-label': 'Rule' }, r.description),
          h('td', { 'data-label': 'Note' }, r.builtin && !/^built-in/.test(r.note ?? '') ? `${r.note ? `${r.note} · ` : ''}built-in` : (r.note ?? '')),
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
              h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Effect'), h('th', { scope: 'col' }, 'Rule'), h('th', { scope: 'col' }, 'Why'))),
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
