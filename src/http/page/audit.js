// The Audit view: rows filtered by the address, the chain check, one row's proof, export.
import { refreshApprovals } from './approvals.js';
import { applyRowToCards } from './chat.js';
import { $, api, authHeaders, fmtDateTime, h, outcomeBadge, pretty, state, toast } from './shared.js';

// ------------------------------------------------------------------ audit

export function setupAudit() {
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
export function fillAuditFilters(q) {
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

/** The badge a row deserves: the audit's word (a call a confirm rule held reads held, waiting for approval). */
function rowOutcome(r) {
  if (r.outcomeWord) return r.outcomeWord;
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

export async function showAudit(id) {
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
    if (v.ok && v.unvouched) {
      // Linked, but no signed digest covers these: a Hearth that found them at start signs nothing over them.
      el.className = 'verify broken';
      el.append(
        `✖ Chain linked, but entries ${v.unvouched.from}..${v.unvouched.to} are NOT vouched for by a signed digest: check them, then run \`hearth audit accept --through ${v.unvouched.to}\``,
      );
    } else if (v.ok) {
      el.className = 'verify ok';
      el.append(`✔ Chain verified${typeof v.rows === 'number' ? `: ${v.rows} rows${v.pending ? ` (${v.pending} pending)` : ''}` : ''}`);
    } else {
      el.className = 'verify broken';
      el.append(`✖ Chain BROKEN${v.firstBroken ? ` at row ${v.firstBroken.id} (${v.firstBroken.kind}): ${v.firstBroken.reason}` : ''}`);
      // A digest or sequence file missing, unreadable or put back: nothing is signed until an owner accepts.
      if (v.findings?.length)
        el.append(' · `hearth audit verify` says what is wrong; `hearth audit accept` prints the evidence and vouches for the log as it is');
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

export function onAuditRow(row) {
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
