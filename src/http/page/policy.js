// The Policy view: the rules in order, adding, moving and removing one, and
// testing what a call would meet.
import { loadApps } from './apps.js';
import { ensureSession } from './chat.js';
import { loadControls } from './controls.js';
import { renderDevices } from './devices.js';
import { $, api, h, state, toast, toolLabel } from './shared.js';

// ------------------------------------------------------------------ policy

export function setupPolicy() {
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

export async function loadPolicy() {
  void loadApps();
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

export function setupPolicyEdit() {
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
