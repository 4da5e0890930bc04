// The Devices view: one live card per device, by floor and area (each entity's part of a card: entity-card.js).
import { loadControls } from './controls.js';
import { entityCard } from './entity-card.js';
import { noteSparkValue } from './history.js';
import { loadHome, onHomeChange, openDevice, partName } from './home.js';
import { $, api, h, state, toast } from './shared.js';

/** An area of at most this many cards is kept in one column (style.css `.area.whole`). */
const WHOLE_AREA_CARDS = 6;
/** The group of entities no area holds (shown last). */
const NO_AREA = 'No area';

// ------------------------------------------------------------------ devices

onHomeChange(() => {
  renderDevices();
  loadLeftOut().catch((err) => toast(`Could not load the devices left out: ${err.message}`));
});

export async function loadDevices() {
  try {
    await Promise.all([loadControls(), loadHome()]);
    const list = await api('GET', '/api/devices');
    for (const e of list) {
      const known = state.devices.get(e.id);
      // A state event may have overtaken the snapshot: keep the newer.
      if (known?.updatedAt && e.updatedAt && known.updatedAt > e.updatedAt) continue;
      state.devices.set(e.id, { ...known, ...e });
    }
    state.devicesLoaded = true;
    // Audit rows drawn before the devices arrived read ids: give them their names.
    for (const td of document.querySelectorAll('#audit-rows td.c-entity')) {
      const e = state.devices.get(td.title);
      if (e) td.textContent = e.name;
    }
    const entities = $('#entity-list');
    // The filter takes an id; the list shows each with the name people say, and its area.
    entities.replaceChildren(
      ...[...state.devices.values()]
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((e) => h('option', { value: e.id, label: e.area ? `${e.name} · ${e.area}` : e.name })),
    );
    renderDevices();
    await loadLeftOut();
  } catch (err) {
    if (err.status !== 401) toast(`Could not load the devices: ${err.message}`);
  }
}

/**
 * For an owner, below the cards: the entities left out for their command topic, and why (GET /api/devices/refused).
 * Those whose topic an away device holds are grouped under that device, with one Forget for it: five entities of a
 * newcomer on an away lock's topic are one thing to forget, not five. The rest (a present owner, a topic no entity
 * may command) are listed as they are.
 */
async function loadLeftOut() {
  const box = $('#devices-left-out');
  const list = state.owner === true ? await api('GET', '/api/devices/refused') : [];
  const away = new Map();
  for (const r of list) if (r.ownerAway && r.ownerDevice) away.set(r.ownerDevice, [...(away.get(r.ownerDevice) ?? []), r]);
  const moved = new Map();
  for (const r of list) if (r.movedFrom) moved.set(r.device, [...(moved.get(r.device) ?? []), r]);
  const rest = list.filter((r) => !(r.ownerAway && r.ownerDevice) && !r.movedFrom);
  box.hidden = !list.length;
  box.replaceChildren(
    ...(list.length
      ? [
          h('summary', {}, `No command for ${list.length} ${list.length === 1 ? 'entity' : 'entities'} (left out)`),
          ...[...moved].map(([device, refused]) => movedGroup(device, refused)),
          ...[...away].map(([device, refused]) => awayGroup(device, refused)),
          ...(rest.length ? [h('ul', {}, ...rest.map((r) => h('li', {}, h('strong', {}, r.name), ` (${r.entity}): ${r.words}`)))] : []),
        ]
      : []),
  );
}

/** An away device and the entities left out for the command or state topics it holds. Only its id is known: it is not in the home. */
function awayGroup(device, refused) {
  const these = refused.length === 1 ? 'this entity claims' : `these ${refused.length} entities claim`;
  const kinds = refused.every((r) => !r.read) ? 'command' : refused.every((r) => r.read) ? 'state' : 'command and state';
  return h(
    'section',
    { class: 'away-owner', dataset: { away: device }, 'aria-label': `${device} (away)` },
    h(
      'p',
      {},
      h('strong', {}, device),
      ` is away (remembered, not in the home now) and holds the ${kinds} topics ${these}; if it is really gone, forgetting it frees them (\`hearth devices forget ${device}\`) `,
      forgetButton(device),
    ),
    h(
      'ul',
      {},
      ...refused.map((r) =>
        h(
          'li',
          {},
          h('strong', {}, r.name),
          ` (${r.entity}): its ${r.read ? 'state' : 'command'} topic ${r.topic} is ${r.read ? 'read' : 'held'} by ${r.owner}`,
        ),
      ),
    ),
  );
}

/**
 * A device its source moved (a rename in Zigbee2MQTT, or a forged message: they look the same) and its entities
 * waiting on the move, with one Confirm for it: bound to the topic shown, so a move changed meanwhile moves nothing.
 */
function movedGroup(device, refused) {
  const these = refused.length === 1 ? 'this entity gets' : `these ${refused.length} entities get`;
  return h(
    'section',
    { class: 'moved-device', dataset: { moved: device }, 'aria-label': `${device} (moved)` },
    h(
      'p',
      {},
      h('strong', {}, device),
      ` was moved by its source (a rename in Zigbee2MQTT, or a forged message: on the broker they look the same); it keeps the command topics it holds and ${these} no command until you confirm. If you renamed it, confirm (\`hearth devices confirm-move ${device}\`) `,
      confirmMoveButton(device, refused[0].topic),
    ),
    h(
      'ul',
      {},
      ...refused.map((r) =>
        h('li', {}, h('strong', {}, r.name), ` (${r.entity}): to ${r.topic}${r.movedFrom.length ? ` from ${r.movedFrom.join(', ')}` : ''}`),
      ),
    ),
  );
}

/** Confirm a device's move (as `hearth devices confirm-move --to`), asked first. */
function confirmMoveButton(device, to) {
  const run = async () => {
    try {
      await api('POST', `/api/home/devices/${encodeURIComponent(device)}/move`, { to });
      toast(`${device} moved to ${to}`);
      await loadDevices();
    } catch (err) {
      // 409: it is being moved elsewhere now; 404: nothing waits any more. The answer says which.
      if (err.status !== 401) toast(`Could not move ${device}: ${err.message}`);
      await loadLeftOut().catch(() => undefined);
    }
  };
  const question = `Did you rename ${device} so that it now takes commands on ${to}? Confirm only if you did: a forged message looks the same.\n(the same as: hearth devices confirm-move ${device})`;
  return h(
    'button',
    {
      type: 'button',
      class: 'small',
      dataset: { control: 'confirm-move' },
      'aria-label': `Confirm the move of ${device}`,
      onclick: () => window.confirm(question) && void run(),
    },
    'Confirm move',
  );
}

/** Forget an away device (as `hearth devices forget`), asked first: its command topics and names go to whoever claims them. */
function forgetButton(device) {
  const run = async () => {
    try {
      await api('DELETE', `/api/home/devices/${encodeURIComponent(device)}`);
      toast(`Forgot ${device}: its command topics and names are free`);
      await loadDevices();
    } catch (err) {
      // 409: it is back in the home; 404: already forgotten. The answer says which.
      if (err.status !== 401) toast(`Could not forget ${device}: ${err.message}`);
      await loadLeftOut().catch(() => undefined);
    }
  };
  const question = `Forget ${device}? Do this only if it is really gone: its command topics and names go to the device that claims them now.\n(the same as: hearth devices forget ${device})`;
  return h(
    'button',
    {
      type: 'button',
      class: 'small deny',
      dataset: { control: 'forget' },
      'aria-label': `Forget ${device}`,
      onclick: () => window.confirm(question) && void run(),
    },
    'Forget',
  );
}

export function applyState(s) {
  const known = state.devices.get(s.id);
  const merged = { ...known, ...s, device: known?.device ?? s.device };
  state.devices.set(s.id, merged);
  if (s.value !== undefined) noteSparkValue(s.id, s.value);
  if (!state.devicesLoaded) return;
  if (state.dragging === s.id) return;
  const card = document.querySelector(`.entity[data-entity="${CSS.escape(s.id)}"]`);
  if (card) {
    // Keep the keyboard where it was: the same control in the new card gets the focus back.
    const active = card.contains(document.activeElement) ? document.activeElement : undefined;
    const focused = active?.dataset?.control;
    // Words being typed (a display's text, a message, a number) survive a report too, with the caret where it was.
    const typing = active?.matches?.('input[type="text"], input[type="number"]') ? { value: active.value, at: active.selectionStart } : undefined;
    const open = card.querySelector('details.more')?.open;
    // A choice made in a select but not yet Set survives the new state (a report must not undo it).
    const pending = [...card.querySelectorAll('select[data-control]')].filter((sel) => sel.value !== sel.dataset.shown);
    const fresh = entityCard(merged, undefined, card.classList.contains('part') ? 'part' : '');
    if (open) fresh.querySelector('details.more').open = true;
    for (const sel of pending) {
      const same = fresh.querySelector(`select[data-control="${CSS.escape(sel.dataset.control)}"]`);
      if (same && [...same.options].some((o) => o.value === sel.value)) same.value = sel.value;
    }
    card.replaceWith(fresh);
    const again = focused ? fresh.querySelector(`[data-control="${CSS.escape(focused)}"]`) : null;
    if (again && typing) {
      again.value = typing.value;
      if (typing.at !== null && again.type === 'text') again.setSelectionRange(typing.at, typing.at);
    }
    again?.focus();
    renderSummary();
  } else renderDevices();
}

/** The areas whose "Other devices" a person opened. */
const openOther = new Set();

export function renderDevices() {
  if (!state.devicesLoaded) return;
  const root = $('#devices');
  // Area -> device -> its entities there (an entity a person placed elsewhere makes a card of its device there too).
  const areas = new Map();
  const floorOf = new Map();
  for (const e of state.devices.values()) {
    const area = e.area ?? NO_AREA;
    if (e.area && e.floor) floorOf.set(e.area, e.floor);
    if (!areas.has(area)) areas.set(area, new Map());
    const devices = areas.get(area);
    const key = e.device ?? e.id;
    if (!devices.has(key)) devices.set(key, []);
    devices.get(key).push(e);
  }
  const names = [...areas.keys()].sort((a, b) => (a === NO_AREA) - (b === NO_AREA) || a.localeCompare(b));
  const areaSection = (area) => {
    const all = [...areas.get(area).entries()].map(([id, entities]) => ({ id, device: state.home.devices.get(id), entities }));
    const label = (d) => d.device?.name ?? d.entities[0].name;
    all.sort((a, b) => label(a).localeCompare(label(b)));
    // A device with nothing but settings and diagnostics (a remote's battery) is folded under the area's cards.
    const everyday = all.filter((d) => d.entities.some((e) => !e.category));
    const folded = all.filter((d) => !d.entities.some((e) => !e.category));
    const cards = everyday.map((d) => deviceCard(d.id, d.device, d.entities));
    const other = folded.length
      ? h(
          'details',
          {
            class: 'other-devices',
            // Opened by a person, it stays open when the view is drawn again (any state change redraws it).
            open: openOther.has(area),
            ontoggle: (ev) => (ev.currentTarget.open ? openOther.add(area) : openOther.delete(area)),
          },
          h('summary', {}, `Other devices (${folded.length}): ${folded.map(label).join(', ')}`),
          folded.map((d) => deviceCard(d.id, d.device, d.entities)),
        )
      : null;
    // The heading and the first card are one piece: a column never starts with an area's card without its name.
    return h(
      'section',
      { class: cards.length + (other ? 1 : 0) <= WHOLE_AREA_CARDS ? 'area whole' : 'area', 'aria-label': area },
      h('div', { class: 'area-start' }, h('h3', {}, area), cards[0] ?? other),
      h('div', { class: 'entities' }, cards.slice(1), cards.length ? other : null),
    );
  };
  // Areas by floor where floors exist (in the floors' order), then the areas on no floor, "No area" last.
  const floors = state.home.floors.map((f) => f.name).filter((f) => names.some((a) => floorOf.get(a) === f));
  const sections = [];
  for (const f of floors)
    sections.push(
      h('section', { class: 'floor', 'aria-label': f }, h('h3', { class: 'floor-title' }, f), names.filter((a) => floorOf.get(a) === f).map(areaSection)),
    );
  const loose = names.filter((a) => !floors.includes(floorOf.get(a)));
  if (floors.length && loose.length) sections.push(h('section', { class: 'floor', 'aria-label': 'No floor' }, loose.map(areaSection)));
  else sections.push(...loose.map(areaSection));
  root.replaceChildren(...sections);
  renderSummary(names.length);
}

/** The line above the cards: how many, and how many are offline or not answering (kept as reports come in). */
function renderSummary(areas = document.querySelectorAll('#devices section.area').length) {
  const all = [...state.devices.values()];
  const offline = all.filter((e) => e.available === false).length;
  const silent = all.filter((e) => e.available !== false && e.notAnswering).length;
  const deviceCount = new Set(all.map((e) => e.device ?? e.id)).size;
  const trouble = [offline ? `${offline} offline` : '', silent ? `${silent} not answering` : ''].filter(Boolean).join(', ');
  const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;
  $('#devices-summary').textContent =
    `${count(deviceCount, 'device', 'devices')} (${count(all.length, 'entity', 'entities')}) in ${count(areas, 'area', 'areas')}, ${trouble || 'all online'} · live`;
}

/** The entity that leads a device's card: the one named as the device, else the first that does something. */
function mainEntity(device, entities) {
  const everyday = entities.filter((e) => !e.category);
  return everyday.find((e) => device && e.name === device.name) ?? everyday.find((e) => ACTING_KINDS.has(e.kind)) ?? everyday[0] ?? entities[0];
}

const ACTING_KINDS = new Set([
  'light',
  'switch',
  'lock',
  'cover',
  'climate',
  'fan',
  'valve',
  'media_player',
  'vacuum',
  'lawn_mower',
  'water_heater',
  'humidifier',
  'siren',
  'alarm_control_panel',
  'camera',
]);

/** A device's card: its main entity, its other readings and controls, its settings and diagnostics folded away. */
function deviceCard(deviceId, device, entities) {
  const main = mainEntity(device, entities);
  const rest = entities.filter((e) => e !== main).sort((a, b) => a.name.localeCompare(b.name));
  const readings = rest.filter((e) => !e.category);
  const settings = rest.filter((e) => e.category);
  const name = device?.name ?? main.name;
  const many = entities.length > 1;
  const card = h(
    'article',
    {
      class: `device-card${main.value === 'on' ? ' is-on' : ''}${entities.every((e) => e.available === false) ? ' is-offline' : ''}`,
      dataset: { device: deviceId },
      'aria-label': name,
    },
    many && partName(device, main) !== name ? h('header', { class: 'device-head' }, h('h4', {}, name)) : null,
    entityCard(main, device),
    readings.map((e) => entityCard(e, device, 'part')),
    settings.length
      ? h(
          'details',
          { class: 'settings' },
          h('summary', {}, settingsWords(settings)),
          settings.map((e) => entityCard(e, device, 'part')),
        )
      : null,
    device
      ? h(
          'div',
          { class: 'device-foot' },
          h('button', { type: 'button', class: 'link', dataset: { control: 'device' }, onclick: () => openDevice(deviceId) }, `About ${name}`),
        )
      : null,
  );
  return card;
}

function settingsWords(list) {
  const config = list.filter((e) => e.category === 'config').length;
  const diagnostic = list.length - config;
  return [config ? `${config} setting${config === 1 ? '' : 's'}` : '', diagnostic ? `${diagnostic} diagnostic${diagnostic === 1 ? '' : 's'}` : '']
    .filter(Boolean)
    .join(' and ');
}
