// The home as people arrange it (GET/POST /api/home/*): each device's name, area, aliases and what agents are
// shown, and the device's details dialog (the Areas view, which places many devices at once, is areas.js). Setters
// are offered to owners only (the ready event says who is one); the API refuses anyone else anyway.
import { $, api, h, state, toast } from './shared.js';

/** The choice in an area select that asks for a new area's name. */
const NEW_AREA = '\u0000new';
/** The choice in an area select that takes a device out of its area. */
const NO_AREA = '\u0000none';
/** The choice in an entity's area select that puts it back with its device. */
const WITH_DEVICE = '\u0000device';

let rerender = () => {};
/** Redraws the Areas view (areas.js registers it). */
let redrawAreas = () => {};

/** What to redraw after the home changed (the Devices view registers it). */
export function onHomeChange(fn) {
  rerender = fn;
}

/** What redraws the Areas view after the home changed (areas.js registers it). */
export function onAreasChange(fn) {
  redrawAreas = fn;
}

/** Devices, areas and floors, read together (a guest reads them too, without setters). */
export async function loadHome() {
  const [devices, areas, floors] = await Promise.all([api('GET', '/api/home/devices'), api('GET', '/api/home/areas'), api('GET', '/api/home/floors')]);
  state.home.devices = new Map(devices.map((d) => [d.id, d]));
  state.home.areas = areas;
  state.home.floors = floors;
  state.home.loaded = true;
}

/** After a change (here, or elsewhere: the event stream's `home`): read the home and the entities again, then redraw what shows them. */
export async function refresh(force = false) {
  await loadHome();
  const list = await api('GET', '/api/devices');
  for (const e of list) state.devices.set(e.id, { ...state.devices.get(e.id), ...e });
  rerender();
  // Words being typed into a form are not redrawn away by another's change; the next change draws them.
  const typing = (root) => !force && root.contains(document.activeElement) && document.activeElement.matches('input[type="text"]');
  if (state.view === 'areas' && !typing($('#areas-body'))) redrawAreas();
  const dlg = $('#device-details');
  if (dlg.open && dlg.dataset.device && !typing(dlg)) renderDetails(dlg.dataset.device);
}

/** Run a setter; its error (the API's words, naming the field) goes to the toast and, if given, under the form. */
export async function change(fn, errorEl) {
  if (errorEl) errorEl.textContent = '';
  // Busy until redrawn with the change: what is typed meanwhile would be drawn away.
  const busy = [$('#areas-body'), $('#device-details-body')];
  for (const el of busy) el.setAttribute('aria-busy', 'true');
  try {
    await fn();
    await refresh(true);
    return true;
  } catch (err) {
    if (errorEl) errorEl.textContent = err.message;
    toast(err.message);
    return false;
  } finally {
    for (const el of busy) el.removeAttribute('aria-busy');
  }
}

/** An entity's name within its device's card: "Battery" for "Front door lock Battery", the device's own name for its main entity. */
export function partName(device, entity) {
  const name = entity.name ?? '';
  if (!device) return name;
  if (name === device.name) return name;
  if (name.startsWith(`${device.name} `)) {
    const rest = name.slice(device.name.length + 1);
    return rest.charAt(0).toUpperCase() + rest.slice(1);
  }
  return name;
}

/** The areas people may choose, by name. */
function areaNames() {
  return [...new Set(state.home.areas.map((a) => a.name))].sort((a, b) => a.localeCompare(b));
}

/** A select of the known areas, "No area" and "New area…", with `current` chosen. */
export function areaSelect(current, label) {
  const sel = h(
    'select',
    { 'aria-label': label, dataset: { control: 'area' } },
    h('option', { value: NO_AREA }, 'No area'),
    areaNames().map((name) => h('option', { value: name }, name)),
    h('option', { value: NEW_AREA }, 'New area…'),
  );
  sel.value = current ?? NO_AREA;
  return sel;
}

/** The body for POST /api/home/devices/:id that puts it in the select's area (asking for a new one's name). */
export function areaChoice(sel) {
  if (sel.value === NO_AREA) return { noArea: true };
  if (sel.value === NEW_AREA) {
    const name = window.prompt('Name of the new area');
    if (!name?.trim()) return undefined;
    return { area: name.trim(), create: true };
  }
  return { area: sel.value };
}

export function setDevice(id, body) {
  return api('POST', `/api/home/devices/${encodeURIComponent(id)}`, body);
}

// ------------------------------------------------------------------ a device's details

/** Open the device's details: its name in its area, and for an owner its area, name, aliases and exposure. */
export function openDevice(deviceId) {
  const dlg = $('#device-details');
  dlg.dataset.device = deviceId;
  renderDetails(deviceId);
  if (!dlg.open) dlg.showModal();
}

function renderDetails(deviceId) {
  const dlg = $('#device-details');
  const d = state.home.devices.get(deviceId);
  const body = $('#device-details-body');
  if (!d) {
    $('#device-details-title').textContent = 'Device';
    body.replaceChildren(h('p', { class: 'muted' }, 'This device is not known (any more).'));
    return;
  }
  $('#device-details-title').textContent = d.area ? `${d.name} · ${d.area}` : d.name;
  const owner = state.owner === true;
  const error = h('p', { class: 'error', role: 'alert' });
  const where = h(
    'p',
    { class: 'muted where' },
    d.area ? `In ${d.area}${d.floor ? ` (${d.floor})` : ''}` : 'In no area',
    d.areaFrom === 'source' ? ', as its source says' : d.areaFrom === 'person' ? ', as a person placed it' : '',
    d.suggestedArea && !d.area ? `; suggested: ${d.suggestedArea}` : '',
    '. ',
    h('code', { title: 'its identity at the source' }, d.identity),
  );
  const parts = [where];
  if (owner) {
    const area = areaSelect(d.area, `Area of ${d.name}`);
    area.addEventListener('change', () => {
      const body = areaChoice(area);
      if (!body) {
        area.value = d.area ?? NO_AREA;
        return;
      }
      void change(() => setDevice(d.id, body), error);
    });
    const name = h('input', { type: 'text', value: d.name, 'aria-label': 'Name', maxlength: 120, autocomplete: 'off', dataset: { control: 'name' } });
    const aliases = h('input', {
      type: 'text',
      value: d.aliases.join(', '),
      'aria-label': 'Aliases',
      placeholder: 'the espresso, coffee',
      autocomplete: 'off',
      dataset: { control: 'aliases' },
    });
    const form = h(
      'form',
      {
        class: 'device-form',
        onsubmit: (ev) => {
          ev.preventDefault();
          const b = {};
          if (name.value.trim() && name.value.trim() !== d.name) b.name = name.value.trim();
          const list = aliases.value
            .split(',')
            .map((a) => a.trim())
            .filter(Boolean);
          if (list.join('\n') !== d.aliases.join('\n')) b.aliases = list;
          if (!Object.keys(b).length) return;
          void change(() => setDevice(d.id, b), error);
        },
      },
      h('label', {}, 'Area ', area),
      h('label', {}, 'Name ', name),
      h('label', {}, 'Aliases ', aliases, h('span', { class: 'hint' }, 'other names people say, separated by commas')),
      h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary', dataset: { control: 'save' } }, 'Save')),
    );
    parts.push(form);
  } else {
    parts.push(h('p', {}, d.aliases.length ? `Also called ${d.aliases.join(', ')}.` : 'No aliases.'));
    parts.push(h('p', { class: 'muted' }, 'Only an owner may change its area, name, aliases or what agents are shown.'));
  }
  parts.push(error);
  parts.push(h('h3', {}, 'Entities'), h('p', { class: 'muted' }, 'Agents (chat, voice, MCP) are shown only the exposed ones. Who may use them is the policy.'));
  parts.push(
    h(
      'ul',
      { class: 'entity-exposure' },
      d.entities.map((e) => {
        const label = `${partName(d, e)}${e.category ? ` (${e.category === 'config' ? 'setting' : 'diagnostic'})` : ''}`;
        const box = h('input', {
          type: 'checkbox',
          checked: e.exposed,
          disabled: !owner,
          'aria-label': `Show ${partName(d, e)} to agents`,
          dataset: { control: 'exposed', entity: e.id },
          onchange: (ev) =>
            void change(() => api('POST', `/api/home/entities/${encodeURIComponent(e.id)}`, { exposed: ev.target.checked }), error).then((ok) => {
              if (!ok) ev.target.checked = !ev.target.checked;
            }),
        });
        return h(
          'li',
          { dataset: { entity: e.id } },
          h('label', {}, box, ` ${label}`),
          h('span', { class: 'muted' }, e.exposed ? ' exposed' : ' not shown to agents'),
          owner ? entityAreaSelect(d, e, error) : e.area !== d.area ? h('span', { class: 'muted' }, ` · in ${e.area ?? 'no area'}`) : null,
        );
      }),
    ),
  );
  body.replaceChildren(...parts);
  dlg.querySelector('[data-control="name"]')?.setAttribute('value', d.name);
}

/**
 * Where one entity is: with its device (the usual), or placed apart (a plug's power reading with the lamp it
 * feeds, POST /api/home/entities/:id). An entity whose area differs from its device's was placed apart.
 */
function entityAreaSelect(d, e, error) {
  const apart = e.area !== d.area;
  const sel = h(
    'select',
    { 'aria-label': `Area of ${partName(d, e)}`, dataset: { control: 'entity-area', entity: e.id } },
    h('option', { value: WITH_DEVICE }, `With the device${d.area ? ` (${d.area})` : ''}`),
    h('option', { value: NO_AREA }, 'No area'),
    areaNames().map((name) => h('option', { value: name }, name)),
  );
  sel.value = apart ? (e.area ?? NO_AREA) : WITH_DEVICE;
  sel.addEventListener('change', () => {
    const body = sel.value === WITH_DEVICE ? { resetArea: true } : sel.value === NO_AREA ? { noArea: true } : { area: sel.value };
    void change(() => api('POST', `/api/home/entities/${encodeURIComponent(e.id)}`, body), error);
  });
  return sel;
}

export function initHome() {
  $('#device-details-close').addEventListener('click', () => $('#device-details').close());
}
