// The Areas view: the devices without an area (a suggestion accepted in one click, a select for the rest), the
// floors with their areas, and for an owner the forms that add, rename, give aliases to and remove areas and
// floors (GET/POST/DELETE /api/home/*). The setters are home.js's, as the device's details use them.
import { areaChoice, areaSelect, change, loadHome, onAreasChange, openDevice, setDevice } from './home.js';
import { $, api, h, state, toast } from './shared.js';

onAreasChange(() => renderAreas());

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
