// The home as people arrange it (GET/POST /api/home/*): each device's name, area, aliases and what agents are
// shown; the device's details dialog; and the Areas view that places many devices at once. Setters are offered to
// owners only (the ready event says who is one); the API refuses anyone else anyway.
import { $, api, h, state, toast } from './shared.js';

/** The choice in an area select that asks for a new area's name. */
const NEW_AREA = '\u0000new';
/** The choice in an area select that takes a device out of its area. */
const NO_AREA = '\u0000none';
/** The choice in an entity's area select that puts it back with its device. */
const WITH_DEVICE = '\u0000device';

let rerender = () => {};

/** What to redraw after the home changed (the Devices view registers it). */
export function onHomeChange(fn) {
  rerender = fn;
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
  if (state.view === 'areas' && !typing($('#areas-body'))) renderAreas();
  const dlg = $('#device-details');
  if (dlg.open && dlg.dataset.device && !typing(dlg)) renderDetails(dlg.dataset.device);
}

/** Run a setter; its error (the API's words, naming the field) goes to the toast and, if given, under the form. */
async function change(fn, errorEl) {
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
function areaSelect(current, label) {
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
function areaChoice(sel) {
  if (sel.value === NO_AREA) return { noArea: true };
  if (sel.value === NEW_AREA) {
    const name = window.prompt('Name of the new area');
    if (!name?.trim()) return undefined;
    return { area: name.trim(), create: true };
  }
  return { area: sel.value };
}

function setDevice(id, body) {
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

/** Words typed as a list ("lounge, den") -> the list. */
const listOf = (text) =>
  text
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);

/** An aliases form: the list, and Save (another name people say for the area or floor). */
function aliasesForm(what, aliases, save) {
  const input = h('input', {
    type: 'text',
    value: aliases.join(', '),
    'aria-label': `Aliases of ${what}`,
    placeholder: 'other names, separated by commas',
    maxlength: 400,
    autocomplete: 'off',
    dataset: { control: 'aliases' },
  });
  return h(
    'form',
    {
      class: 'inline aliases',
      onsubmit: (ev) => {
        ev.preventDefault();
        const list = listOf(input.value);
        if (list.join('\n') !== aliases.join('\n')) void save(list);
      },
    },
    input,
    h('button', { type: 'submit', class: 'small', dataset: { control: 'save-aliases' } }, 'Save aliases'),
  );
}

/** A Remove button that asks first, saying what happens to what is in it. */
function removeButton(label, question, run) {
  return h(
    'button',
    {
      type: 'button',
      class: 'small deny',
      dataset: { control: 'remove' },
      'aria-label': label,
      onclick: () => {
        if (window.confirm(question)) void run();
      },
    },
    'Remove',
  );
}

export function initHome() {
  $('#device-details-close').addEventListener('click', () => $('#device-details').close());
}

// ------------------------------------------------------------------ the Areas view

export async function showAreas() {
  // Busy until drawn afresh: what is typed into the old forms meanwhile would be lost.
  const root = $('#areas-body');
  root.setAttribute('aria-busy', 'true');
  try {
    await loadHome();
    renderAreas();
  } catch (err) {
    if (err.status !== 401) toast(`Could not load the areas: ${err.message}`);
  } finally {
    root.removeAttribute('aria-busy');
  }
}

function renderAreas() {
  const owner = state.owner === true;
  const root = $('#areas-body');
  const devices = [...state.home.devices.values()].sort((a, b) => a.name.localeCompare(b.name));
  const unplaced = devices.filter((d) => !d.area);
  const error = h('p', { class: 'error', role: 'alert' });
  const parts = [];
  parts.push(h('h3', {}, `Devices without an area (${unplaced.length})`));
  if (!unplaced.length) parts.push(h('p', { class: 'muted' }, 'Every device has an area.'));
  else
    parts.push(
      h(
        'ul',
        { class: 'place-list' },
        unplaced.map((d) => {
          const row = [h('span', { class: 'place-name' }, d.name)];
          if (d.suggestedArea) row.push(h('span', { class: 'muted' }, ` suggested: ${d.suggestedArea}`));
          if (owner) {
            if (d.suggestedArea)
              row.push(
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'small primary',
                    dataset: { control: 'accept' },
                    'aria-label': `Put ${d.name} in ${d.suggestedArea}`,
                    onclick: () => void change(() => setDevice(d.id, { area: d.suggestedArea, create: true }), error),
                  },
                  'Accept suggestion',
                ),
              );
            const sel = areaSelect(null, `Area of ${d.name}`);
            sel.addEventListener('change', () => {
              const body = areaChoice(sel);
              if (!body || body.noArea) return;
              void change(() => setDevice(d.id, body), error);
            });
            row.push(sel);
          }
          row.push(h('button', { type: 'button', class: 'link', onclick: () => openDevice(d.id) }, 'Details'));
          return h('li', { dataset: { device: d.id } }, row);
        }),
      ),
    );
  parts.push(error);
  // Floors with their areas, then the areas on no floor.
  const floorNames = state.home.floors.map((f) => f.name);
  const byFloor = new Map(state.home.floors.map((f) => [f.name, []]));
  const loose = [];
  for (const a of state.home.areas) (a.floor && byFloor.has(a.floor) ? byFloor.get(a.floor) : loose).push(a);
  const areaRow = (a) => {
    const placed = devices.filter((d) => d.area === a.name);
    const row = [h('span', { class: 'place-name' }, a.name), h('span', { class: 'muted' }, ` ${placed.length} device${placed.length === 1 ? '' : 's'}`)];
    if (owner) {
      const rename = h('input', { type: 'text', value: a.name, 'aria-label': `New name for ${a.name}`, maxlength: 80, autocomplete: 'off' });
      const floor = h(
        'select',
        { 'aria-label': `Floor of ${a.name}` },
        h('option', { value: '' }, 'No floor'),
        floorNames.map((f) => h('option', { value: f }, f)),
      );
      floor.value = a.floor ?? '';
      const save = (body) => change(() => (a.stored ? api('POST', `/api/home/areas/${encodeURIComponent(a.name)}`, body) : addArea(a.name, body)), error);
      floor.addEventListener('change', () => void save({ floor: floor.value || null }));
      row.push(
        h(
          'form',
          {
            class: 'inline',
            onsubmit: (ev) => {
              ev.preventDefault();
              if (rename.value.trim() && rename.value.trim() !== a.name) void save({ name: rename.value.trim() });
            },
          },
          rename,
          h('button', { type: 'submit', class: 'small' }, 'Rename'),
        ),
        floor,
        aliasesForm(a.name, a.aliases, (aliases) => save({ aliases })),
      );
      // Only a stored area can go: one only a source names comes back from its devices' names.
      if (a.stored)
        row.push(
          removeButton(
            `Remove the area ${a.name}`,
            `Remove the area ${a.name}? Devices you put there go back to where their source says (or to no area); their names, aliases and exposure stay.`,
            () => change(() => api('DELETE', `/api/home/areas/${encodeURIComponent(a.name)}`), error),
          ),
        );
    } else {
      if (a.floor) row.push(h('span', { class: 'muted' }, ` on ${a.floor}`));
      if (a.aliases.length) row.push(h('span', { class: 'muted' }, ` · also called ${a.aliases.join(', ')}`));
    }
    return h('li', { dataset: { area: a.name } }, row);
  };
  for (const f of state.home.floors) {
    parts.push(h('h3', { class: 'floor-title' }, f.name));
    if (owner) {
      const rename = h('input', { type: 'text', value: f.name, 'aria-label': `New name for ${f.name}`, maxlength: 80, autocomplete: 'off' });
      parts.push(
        h(
          'form',
          {
            class: 'inline',
            dataset: { floor: f.name },
            onsubmit: (ev) => {
              ev.preventDefault();
              const name = rename.value.trim();
              if (name && name !== f.name) void change(() => api('POST', `/api/home/floors/${encodeURIComponent(f.id)}`, { name }), error);
            },
          },
          rename,
          h('button', { type: 'submit', class: 'small' }, 'Rename floor'),
        ),
        h(
          'div',
          { class: 'floor-tools', dataset: { floor: f.name } },
          aliasesForm(f.name, f.aliases, (aliases) => change(() => api('POST', `/api/home/floors/${encodeURIComponent(f.id)}`, { aliases }), error)),
          removeButton(`Remove the floor ${f.name}`, `Remove the floor ${f.name}? Its areas stay, on no floor, with their devices.`, () =>
            change(() => api('DELETE', `/api/home/floors/${encodeURIComponent(f.id)}`), error),
          ),
        ),
      );
    } else if (f.aliases.length) parts.push(h('p', { class: 'muted' }, `Also called ${f.aliases.join(', ')}.`));
    parts.push(h('ul', { class: 'place-list' }, byFloor.get(f.name).map(areaRow)));
    if (!byFloor.get(f.name).length) parts.push(h('p', { class: 'muted' }, 'No areas on this floor yet.'));
  }
  parts.push(h('h3', {}, state.home.floors.length ? 'Areas on no floor' : 'Areas'), h('ul', { class: 'place-list' }, loose.map(areaRow)));
  if (owner) {
    const areaName = h('input', { type: 'text', name: 'area', 'aria-label': 'New area', placeholder: 'Living room', maxlength: 80, autocomplete: 'off' });
    const floorName = h('input', { type: 'text', name: 'floor', 'aria-label': 'New floor', placeholder: 'Upstairs', maxlength: 80, autocomplete: 'off' });
    parts.push(
      h(
        'form',
        {
          class: 'inline',
          id: 'area-add',
          onsubmit: (ev) => {
            ev.preventDefault();
            if (areaName.value.trim()) void change(() => addArea(areaName.value.trim()), error);
          },
        },
        areaName,
        h('button', { type: 'submit', class: 'small' }, 'Add area'),
      ),
      h(
        'form',
        {
          class: 'inline',
          id: 'floor-add',
          onsubmit: (ev) => {
            ev.preventDefault();
            if (floorName.value.trim()) void change(() => api('POST', '/api/home/floors', { name: floorName.value.trim() }), error);
          },
        },
        floorName,
        h('button', { type: 'submit', class: 'small' }, 'Add floor'),
      ),
    );
  } else parts.push(h('p', { class: 'muted' }, 'Only an owner may place devices and add, rename or remove areas and floors.'));
  root.replaceChildren(...parts);
}

/** Store an area (one only a source names is stored with its first change). */
function addArea(name, extra = {}) {
  const body = { name };
  if (extra.floor) body.floor = extra.floor;
  if (extra.aliases) body.aliases = extra.aliases;
  return api('POST', '/api/home/areas', body).then((a) =>
    extra.name ? api('POST', `/api/home/areas/${encodeURIComponent(a.name)}`, { name: extra.name }) : a,
  );
}
