// The Approvals view: held calls waiting for a person, and recent decisions.
import { $, api, decisionButtons, fmtTime, h, pretty, relTime, state, toast, toolLabel } from './shared.js';
import { argsWords, entityOfCall } from './values.js';

// ------------------------------------------------------------------ approvals

export async function refreshApprovals() {
  try {
    const list = await api('GET', '/api/approvals?status=all&limit=50');
    for (const a of list) state.approvals.set(a.id, a);
    renderApprovals();
  } catch {
    // shown elsewhere
  }
}

export function renderApprovals() {
  const all = [...state.approvals.values()].sort((a, b) => (b.createdAt > a.createdAt ? 1 : -1));
  const now = Date.now();
  const pending = all.filter((a) => a.status === 'pending' && Date.parse(a.expiresAt) > now);
  const done = all.filter((a) => !pending.includes(a)).slice(0, 20);
  // Questions this page's chat is asking are waiting for a person too: answered here, the chat says so.
  const asks = [...state.chatAsks.values()];
  const waiting = pending.length + asks.length;
  const badge = $('#approvals-badge');
  badge.hidden = waiting === 0;
  badge.textContent = String(waiting);
  $('#approvals-pending').replaceChildren(
    ...(waiting ? [...asks.map(askCard), ...pending.map(approvalCard)] : [h('p', { class: 'muted' }, 'Nothing is waiting for approval.')]),
  );
  $('#approvals-done').replaceChildren(...(done.length ? done.map(approvalCard) : [h('p', { class: 'muted' }, 'None yet.')]));
}

/** "Unlock Front door lock": what a held call would do, in words, when the page knows the device. */
export function approvalWords(a) {
  const e = entityOfCall(toolLabel(a.tool), a.args);
  const action = String(a.args?.action ?? a.args?.option ?? 'use').replace(/_/g, ' ');
  return e ? `${action.charAt(0).toUpperCase()}${action.slice(1)} ${e.name}` : toolLabel(a.tool);
}

/** A question the chat is asking, answered from here as from the chat's own buttons. */
function askCard(ask) {
  const el = h(
    'article',
    { class: 'card approval status-pending', dataset: { ask: ask.id }, 'aria-label': `Asked in the chat: ${argsWords(ask.tool, ask.args)}` },
    h('header', {}, h('strong', {}, argsWords(ask.tool, ask.args)), ' ', h('span', { class: 'outcome approval-pending' }, 'asked in the chat')),
    h(
      'p',
      { class: 'muted' },
      h('code', {}, ask.tool),
      ` · ${state.principal ?? 'you'} · `,
      relTime(ask.at),
      ' · ',
      h('a', { href: '#chat' }, 'open the chat'),
    ),
    h('p', { class: 'reason' }, ask.why),
  );
  const answer = (decision) => {
    for (const b of el.querySelectorAll('button')) b.disabled = true;
    void ask.respond(decision, 'Approvals tab');
  };
  el.append(
    decisionButtons(
      () => answer('allow_once'),
      () => answer('deny'),
    ),
  );
  return el;
}

function approvalCard(a) {
  const pending = a.status === 'pending';
  const el = h(
    'article',
    { class: `card approval status-${a.status}`, dataset: { approval: a.id }, 'aria-label': `Approval: ${approvalWords(a)}, ${a.status}` },
    h('header', {}, h('strong', {}, approvalWords(a)), ' ', h('span', { class: `outcome approval-${a.status}` }, a.status)),
    h('p', { class: 'args', title: pretty(a.args) }, argsWords(toolLabel(a.tool), a.args)),
    h(
      'p',
      { class: 'muted' },
      h('code', {}, toolLabel(a.tool)),
      ` · ${a.principalName ?? a.principal} · `,
      relTime(a.createdAt),
      pending ? ` · expires ${fmtTime(a.expiresAt)}` : a.decidedBy ? ` · by ${a.decidedByName ?? a.decidedBy}` : '',
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
      decisionButtons(
        () => decide('grant'),
        () => decide('deny'),
      ),
    );
  }
  return el;
}
