// Hearth's web page: chat (typed or spoken), live devices, approvals, the
// audit log and the policy. Plain JavaScript ES modules, no build step, no
// outside resources. Everything goes through the same HTTP API as any other
// client, with the token in an Authorization header (so no cookies, no CSRF);
// text from the home is only ever set as textContent.
// This module signs in, routes between the views and reads the live events.
import { approvalWords, refreshApprovals, renderApprovals } from './approvals.js';
import { fillAuditFilters, onAuditRow, setupAudit, showAudit } from './audit.js';
import { onChatApproval, scrollChat, setupChat } from './chat.js';
import { onControlApproval } from './controls.js';
import { applyState, loadDevices, renderDevices } from './devices.js';
import { showAreas } from './areas.js';
import { initHome, refresh as refreshHome } from './home.js';
import { setupHistory } from './history.js';
import { loadPolicy, setupPolicy, setupPolicyEdit } from './policy.js';
import {
  $,
  ApiError,
  TOKEN_KEY,
  VIEWS,
  api,
  authHeaders,
  keepToken,
  listenToOtherTabs,
  readSse,
  showOnly,
  signedOut,
  state,
  toast,
  tokenFromOtherTabs,
  untoast,
} from './shared.js';

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
  initHome();
  $('#logout').addEventListener('click', () => signedOut('Signed out.'));
  window.addEventListener('hashchange', route);
  try {
    await probeOrAsk();
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
  listenToOtherTabs(async (token) => {
    state.token = token;
    try {
      await probe();
    } catch {
      state.token = null;
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    start();
  });
}

/** Probe as we are; with no token of its own, a tab the server refuses asks the page's other open tabs for theirs. */
async function probeOrAsk() {
  try {
    await probe();
  } catch (err) {
    if (state.token || !(err instanceof ApiError && err.status === 401)) throw err;
    const shared = await tokenFromOtherTabs();
    if (!shared) throw err;
    state.token = shared;
    await probe();
    sessionStorage.setItem(TOKEN_KEY, shared);
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
  keepToken(token);
  start();
}

export function start() {
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
  if (view === 'areas') void showAreas();
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
      state.owner = data.owner === true;
      // The name a person recognises; the id (which rules and the audit use) on hover.
      $('#whoami').textContent = data.principalName ?? data.principal;
      $('#whoami').title = data.principal;
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
    case 'home':
      if (state.devicesLoaded) void refreshHome(false).catch((err) => console.warn('home', err));
      break;
    case 'audit':
      onAuditRow(data);
      break;
    case 'approval':
      state.approvals.set(data.id, data);
      onControlApproval(data);
      onChatApproval(data);
      renderApprovals();
      if (data.event === 'requested' && data.status === 'pending' && state.view !== 'approvals') {
        toast(`Approval needed: ${approvalWords(data)} for ${data.principal} (see Approvals)`, data.id);
      } else if (data.status !== 'pending') {
        untoast(data.id);
      }
      break;
  }
}

// ------------------------------------------------------------------ go

void boot();
