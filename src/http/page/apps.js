// The apps signed in by OAuth (MCP clients an owner let in): who each acts as,
// with which roles, and a Revoke that ends its tokens and open sessions (the
// same as `hearth token revoke <name>`). Owners only; others see nothing here.
import { $, api, h, toast } from './shared.js';

export async function loadApps() {
  const section = $('#apps');
  let grants;
  try {
    grants = (await api('GET', '/api/oauth/grants', undefined, { quiet401: true })).grants;
  } catch {
    // Not an owner, or MCP is off: no apps to show.
    section.hidden = true;
    return;
  }
  section.hidden = false;
  $('#apps-empty').hidden = grants.length > 0;
  $('#apps-list').replaceChildren(
    ...grants.map((g) =>
      h(
        'tr',
        { dataset: { grant: g.tokenName } },
        // The app's name is its own word: text, never markup.
        h('td', { 'data-label': 'App' }, h('span', { text: g.clientName }), h('br'), h('code', { class: 'cli', text: g.tokenName })),
        h('td', { 'data-label': 'Acts as' }, g.principal),
        h('td', { 'data-label': 'Roles' }, g.roles.join(', ') || '-'),
        h('td', { 'data-label': 'Let in by' }, `${g.grantedBy}, ${g.createdAt.slice(0, 16).replace('T', ' ')}`),
        h('td', { 'data-label': 'Last used' }, g.lastUsedAt ? g.lastUsedAt.slice(0, 16).replace('T', ' ') : 'never'),
        h(
          'td',
          { 'data-label': 'Status' },
          g.revokedAt
            ? `revoked ${g.revokedAt.slice(0, 16).replace('T', ' ')}`
            : h('button', { type: 'button', class: 'small deny', 'aria-label': `Revoke ${g.clientName}`, onclick: () => revoke(g) }, 'Revoke'),
        ),
      ),
    ),
  );
}

async function revoke(grant) {
  if (!confirm(`Revoke ${grant.clientName} (${grant.principal})? It is signed out at once.\n(the same as: hearth token revoke ${grant.tokenName})`)) return;
  try {
    await api('POST', `/api/oauth/grants/${encodeURIComponent(grant.tokenName)}/revoke`);
    toast(`${grant.clientName} is signed out`);
  } catch (err) {
    toast(`Could not revoke ${grant.tokenName}: ${err.message}`);
  }
  await loadApps();
}
