// The chat: a session's turns streamed as events, with a card per tool call.
import { renderApprovals } from './approvals.js';
import { chatFrame } from './entity-card.js';
import { $, ASK_KEY, api, authHeaders, decisionButtons, h, pretty, readSse, signedOut, state, toast, toolLabel } from './shared.js';
import { setupSpeech, speak } from './speech.js';
import { argsWords, readableResult } from './values.js';

// ------------------------------------------------------------------ chat

export function setupChat() {
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
  setupSpeech(sendPrompt);
}

export async function ensureSession() {
  if (state.sessionId) return state.sessionId;
  // permissions 'jan': every action asks here first, so a confirm rule is answered by the Approve button.
  const created = await api('POST', '/api/sessions', { permissions: 'jan' });
  state.sessionId = created.id;
  return created.id;
}

export function scrollChat() {
  const log = $('#chat-log');
  log.scrollTop = log.scrollHeight;
}

function setBusy(busy) {
  $('#send').disabled = busy;
  $('#stop').hidden = !busy;
  $('#chat-form').classList.toggle('busy', busy);
}

export async function sendPrompt(text, retried = false) {
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
      showArgs(card, ev.args ?? {});
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
          forgetAsk(ev.request_id);
          setStatus(card, 'interrupted', 'cancelled');
        }
      }
      break;
    case 'tool_result': {
      const card = turn.cards.get(ev.id);
      if (!card) break;
      // In words; the exact text (what the model read) on hover.
      card.resultEl.textContent = readableResult(ev.content);
      card.resultEl.title = String(ev.content ?? '');
      card.permEl?.remove();
      if (card.requestId) forgetAsk(card.requestId);
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
  const argsEl = h('p', { class: 'args' }, '');
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

export function applyRowToCards(row) {
  for (const card of state.cardsByAudit.get(row.id) ?? []) {
    if (row.outcome !== 'pending') setStatus(card, row.outcome, row.outcome);
  }
}

async function permissionCard(turn, ev) {
  const card = cardFor(turn, ev.tool_name, ev.args) ?? toolCard(turn, `perm-${ev.request_id}`, ev.tool_name);
  if (!card.args) showArgs(card, ev.args);
  card.requestId = ev.request_id;
  setStatus(card, 'asking', 'asking…');
  /** `from`: where the answer was given, when not on this card (the Approvals tab). */
  const respond = async (decision, from) => {
    for (const b of card.permEl?.querySelectorAll('button') ?? []) b.disabled = true;
    try {
      await api('POST', `/api/sessions/${encodeURIComponent(state.sessionId)}/permissions/${encodeURIComponent(ev.request_id)}`, { decision });
      forgetAsk(ev.request_id);
      card.permEl?.remove();
      card.permEl = null;
      // Answered elsewhere: the chat keeps a note of it where the question was (the result may already be in).
      if (from) card.el.append(h('p', { class: 'notice', dataset: { answered: from } }, `${decision === 'deny' ? 'Denied' : 'Approved'} on the ${from}.`));
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
    h('p', {}, 'Allow ', h('strong', {}, argsWords(toolLabel(ev.tool_name), ev.args)), '?'),
    h('p', { class: 'muted' }, why),
    decisionButtons(
      () => respond('allow_once'),
      () => respond('deny'),
      ev.offers_always && decision?.effect !== 'confirm'
        ? h('button', { type: 'button', class: 'link', onclick: () => respond('allow_always') }, `Always allow ${toolLabel(ev.tool_name)}`)
        : null,
    ),
  );
  card.el.append(card.permEl);
  card.permEl.querySelector('button.approve').focus({ preventScroll: true });
  // The question is on the Approvals tab too, until it is answered here or there.
  state.chatAsks.set(ev.request_id, { id: ev.request_id, tool: toolLabel(ev.tool_name), args: ev.args, why, at: new Date().toISOString(), respond });
  renderApprovals();
  scrollChat();
}

/** The arguments in words on the card; the exact JSON on hover. */
function showArgs(card, args) {
  card.args = args ?? {};
  card.argsEl.textContent = argsWords(toolLabel(card.name), card.args);
  card.argsEl.title = pretty(card.args);
}

function forgetAsk(requestId) {
  if (state.chatAsks.delete(requestId)) renderApprovals();
}

/** An approval held from this chat was decided elsewhere (the Approvals tab, another approver): its notice says so. */
export function onChatApproval(a) {
  if (a.status === 'pending') return;
  for (const box of document.querySelectorAll(`#chat-log .permission[data-approval="${CSS.escape(a.id)}"]`)) {
    if (!box.querySelector('button:not([disabled])')) continue;
    box.replaceChildren(
      h(
        'p',
        {},
        `Approval ${a.status}${a.decidedBy ? ` by ${a.decidedByName ?? a.decidedBy}` : ''}${a.status === 'granted' ? ': ask again to make the call.' : '.'}`,
      ),
    );
  }
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
    decisionButtons(
      () => decide('grant'),
      () => decide('deny'),
    ),
  );
  card.el.append(box);
}
