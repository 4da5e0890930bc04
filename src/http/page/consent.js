// The consent page (/oauth/authorize): an owner signs in with a token, as on
// Hearth's main page, sees which app asks (its own words, shown as text) and
// where it would be sent back, and picks the principal and roles it acts as.
// Hearth checks the request again when the answer comes; this page only asks.
const TOKEN_KEY = 'hearth.token';
const query = location.search;
let token = sessionStorage.getItem(TOKEN_KEY);

const $ = (id) => document.getElementById(id);

async function api(path, body) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(path, { method: 'POST', headers, body: JSON.stringify(body) });
  let json = {};
  try {
    json = await res.json();
  } catch {
    // An empty or non-JSON answer: the status says enough.
  }
  return { status: res.status, json };
}

function show(id) {
  for (const part of ['login-form', 'consent-form', 'done']) $(part).hidden = part !== id;
}

function finish(text, back) {
  $('done-text').textContent = text;
  if (back) {
    const link = document.createElement('a');
    link.href = back;
    link.textContent = 'Back to the app';
    $('done-text').append(' ', link);
  }
  show('done');
}

function render(data) {
  $('client-name').textContent = data.client.name;
  $('redirect-uri').textContent = data.client.redirectUri;
  $('resource').textContent = data.resource;
  $('client-id').textContent = data.client.id;
  $('you').textContent = data.you;
  $('principal').value = data.principal;
  $('principal-note').textContent = data.principalRoles.length
    ? `${data.principal} exists already, with the roles ${data.principalRoles.join(', ')}: allowing gives it the roles ticked below instead.`
    : '';
  const box = $('roles');
  for (const old of box.querySelectorAll('label')) old.remove();
  for (const role of data.grantable) {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.name = 'role';
    input.value = role;
    input.checked = data.asked.includes(role);
    label.append(input, ` ${role}`);
    box.append(label);
  }
  const beyond = data.asked.filter((r) => !data.grantable.includes(r));
  $('asked-note').textContent = beyond.length ? `It also asked for ${beyond.join(', ')}, which is not a role you can give.` : '';
  show('consent-form');
}

async function load() {
  const r = await api('/api/oauth/authorize', { query });
  if (r.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    token = null;
    show('login-form');
    return;
  }
  if (r.status !== 200) {
    finish(`This sign-in cannot go on: ${r.json.error?.message ?? `HTTP ${r.status}`}`, r.json.error?.redirect);
    return;
  }
  render(r.json);
}

async function decide(allow) {
  const roles = [...document.querySelectorAll('#roles input:checked')].map((i) => i.value);
  const r = await api('/api/oauth/decision', { query, allow, principal: $('principal').value.trim(), roles });
  if (r.status !== 200) {
    $('consent-error').textContent = r.json.error?.message ?? `HTTP ${r.status}`;
    return;
  }
  finish(allow ? 'Allowed. Returning to the app…' : 'Refused. Returning to the app…');
  location.assign(r.json.redirect);
}

$('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  token = $('token').value.trim();
  if (!token) return;
  const r = await api('/api/oauth/authorize', { query });
  if (r.status === 401) {
    $('login-error').textContent = 'That token is not valid here.';
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  if (r.status !== 200) finish(`This sign-in cannot go on: ${r.json.error?.message ?? `HTTP ${r.status}`}`, r.json.error?.redirect);
  else render(r.json);
});
$('consent-form').addEventListener('submit', (event) => {
  event.preventDefault();
  void decide(true);
});
$('deny').addEventListener('click', () => void decide(false));

void load();
