// One entity's part of a device's card: its value, its controls, its history link and details; a camera's frames.
import { controlsFor, statusParts } from './controls.js';
import { openHistory, sparkline, wantsSparkline } from './history.js';
import { partName } from './home.js';
import { fetchBlob, fmtDateTime, fmtTime, fmtValue, h, relTime, state, toast } from './shared.js';
import { attrWords, cap, colorName, detailAttrs, hex, kelvinOf, kelvinWords, lightRgb, mainValue } from './values.js';

function availability(e) {
  // Offline (the device's own availability says so) is the plainer truth than not answering.
  if (e.available === false) return h('span', { class: 'avail off', title: 'unavailable' }, 'offline');
  if (e.notAnswering) {
    const why =
      e.notAnswering.cause === 'nothing'
        ? 'it left a command unanswered and has reported nothing since'
        : 'it has answered no command since the broker failed over';
    return h('span', { class: 'avail off', title: `not answering since ${e.notAnswering.since}: ${why}` }, 'not answering');
  }
  if (e.available === true) return h('span', { class: 'avail on', title: 'available' }, 'online');
  return h('span', { class: 'avail unknown', title: 'availability not reported yet' }, 'unknown');
}

/** One entity's part of its device's card (`part`: not the device's main entity; its name said within the device). */
export function entityCard(e, device = state.home.devices.get(e.device), part = '') {
  const ctl = state.controls.get(e.id);
  const isCamera = e.kind === 'camera' || e.kind === 'image';
  const withUnit = (v) => `${fmtValue(v)}${e.unit && typeof v === 'number' ? ` ${e.unit}` : ''}`;
  const rgb = e.kind === 'light' ? lightRgb(e.attributes ?? {}) : null;
  // A white by colour temperature has no colour name (its left-over xy would name a stale one).
  const showsColour = rgb && e.value === 'on' && e.attributes?.color_mode !== 'color_temp';
  const attrs = detailAttrs(e);
  const headingId = `card-${e.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const card = h(
    'article',
    {
      class: `entity kind-${e.kind}${part ? ' part' : ''}${e.available === false ? ' is-offline' : ''}${e.value === 'on' ? ' is-on' : ''}`,
      dataset: { entity: e.id },
      'aria-labelledby': headingId,
    },
    h('header', {}, h('h4', { id: headingId, title: e.id }, partName(device, e)), availability(e)),
    h(
      'p',
      { class: 'value', dataset: { value: isCamera ? '' : String(e.value ?? '') } },
      mainValue(e, ctl),
      showsColour ? h('span', { class: 'swatch', style: { background: hex(rgb) }, title: hex(rgb), 'aria-hidden': 'true' }) : null,
      showsColour ? h('span', { class: 'color-name' }, colorName(rgb)) : null,
    ),
    wantsSparkline(e) ? sparkline(e) : null,
    e.kind === 'light' &&
      typeof e.attributes?.color_temp === 'number' &&
      e.attributes.color_temp > 0 &&
      e.value === 'on' &&
      (e.attributes.color_mode ?? 'color_temp') === 'color_temp'
      ? h(
          'p',
          { class: 'sub', title: `${e.attributes.color_temp} ${e.attributes.color_temp > 1000 ? 'K' : 'mired'}` },
          `Colour temperature ${kelvinWords(kelvinOf(e.attributes.color_temp))}`,
        )
      : null,
    e.kind === 'climate' && typeof e.attributes?.temperature === 'number'
      ? h(
          'p',
          { class: 'sub' },
          `Target ${withUnit(e.attributes.temperature)} · ${fmtValue(e.value)}${e.attributes.action ? ` · ${fmtValue(e.attributes.action)}` : ''}`,
        )
      : null,
    applianceLine(e, withUnit),
  );
  if (isCamera) {
    const img = h('img', { class: 'frame', alt: `Latest picture from ${e.name}`, width: 320, height: 180 });
    card.append(img);
    showFrame(e.id, img, e.updatedAt);
    card.append(
      h(
        'div',
        { class: 'controls' },
        h('button', { type: 'button', class: 'small', dataset: { control: 'snapshot' }, onclick: () => snapshot(e) }, 'Save snapshot'),
      ),
    );
  }
  const controls = controlsFor(e, ctl);
  if (controls) card.append(controls);
  const status = state.controlStatus.get(e.id);
  card.append(h('p', { class: 'control-status', role: 'status', 'aria-live': 'polite' }, status ? statusParts(status) : null));
  card.append(
    h(
      'footer',
      {},
      e.updatedAt ? h('span', { class: 'updated' }, e.retained ? 'reported before start' : relTime(e.updatedAt)) : h('span', {}, ''),
      isCamera || e.kind === 'button' || e.kind === 'scene' || e.kind === 'notify'
        ? null
        : h(
            'button',
            { type: 'button', class: 'link', dataset: { control: 'history' }, 'aria-label': `History of ${e.name}`, onclick: () => openHistory(e.id) },
            'History',
          ),
    ),
    h(
      'details',
      { class: 'more' },
      h('summary', {}, 'Details'),
      attrs.length
        ? h(
            'dl',
            { class: 'attrs' },
            attrs.flatMap(([k, v]) => {
              const [name, text] = attrWords(e, k, v);
              return [h('dt', {}, name), h('dd', {}, text)];
            }),
          )
        : null,
      h(
        'p',
        { class: 'meta' },
        `${e.kind.replace(/_/g, ' ')}${e.deviceClass ? ` · ${e.deviceClass}` : ''} · `,
        h('code', {}, e.id),
        e.updatedAt ? ` · ${fmtDateTime(e.updatedAt)}` : '',
      ),
    ),
  );
  return card;
}

/** The line under the value of the kinds of #31 whose value says one thing of several: a robot's battery and fan
 * speed, a water heater's target and mode, when a doorbell last rang, a firmware's installed and latest version. */
function applianceLine(e, withUnit) {
  const a = e.attributes ?? {};
  if (e.kind === 'vacuum' || e.kind === 'lawn_mower') {
    const parts = [
      typeof a.battery_level === 'number' ? `Battery ${Math.round(a.battery_level)}%` : '',
      a.fan_speed ? `fan speed ${fmtValue(a.fan_speed).replace(/_/g, ' ')}` : '',
    ];
    const text = parts.filter(Boolean).join(' · ');
    return text ? h('p', { class: 'sub' }, text) : null;
  }
  if (e.kind === 'water_heater') {
    const parts = [typeof a.temperature === 'number' ? `Target ${withUnit(a.temperature)}` : '', typeof a.current_temperature === 'number' ? cap(e.value) : ''];
    if (a.away_mode !== undefined && a.away_mode !== null) parts.push(a.away_mode === true || a.away_mode === 'on' ? 'Away' : '');
    const text = parts.filter(Boolean).join(' · ');
    return text ? h('p', { class: 'sub' }, text) : null;
  }
  if (e.kind === 'event' && e.updatedAt && e.value !== null && e.value !== undefined)
    return h('p', { class: 'sub' }, 'Last event ', e.retained ? 'before Hearth started' : relTime(e.updatedAt));
  if (e.kind === 'update' && e.value !== null && e.value !== undefined)
    return h('p', { class: 'sub' }, `Installed ${fmtValue(e.value)}${a.latest_version ? ` · latest ${fmtValue(a.latest_version)}` : ''}`);
  return null;
}

async function snapshot(e) {
  try {
    const { blob, headers } = await fetchBlob(`/api/devices/${encodeURIComponent(e.id)}/frame`);
    const at = (headers.get('x-frame-at') ?? new Date().toISOString()).replace(/[:.]/g, '-');
    const ext = (blob.type.split('/')[1] ?? 'jpg').replace('jpeg', 'jpg');
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: `${e.id}-${at}.${ext}`, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    toast(`Saved a snapshot of ${e.name}`);
  } catch (err) {
    toast(`No snapshot from ${e.name}: ${err.message}`);
  }
}

/** Put the camera's latest frame into img (fetched with the token, shown as a blob: URL). */
function showFrame(id, img, at) {
  let f = state.frames.get(id);
  if (!f) {
    f = { url: null, at: undefined, busy: false, again: false, want: undefined };
    state.frames.set(id, f);
  }
  img.dataset.camera = id;
  if (f.url) img.src = f.url;
  // Only the devices view fetches frames; it re-renders when shown.
  if ((f.url && f.at === at) || state.view !== 'devices') return;
  if (f.busy) {
    f.again = true;
    f.want = at;
    return;
  }
  void refreshFrame(id, at);
}

async function refreshFrame(id, at) {
  const f = state.frames.get(id);
  f.busy = true;
  const imgs = () => document.querySelectorAll(`img.frame[data-camera="${CSS.escape(id)}"]`);
  try {
    const { blob } = await fetchBlob(`/api/devices/${encodeURIComponent(id)}/frame`);
    const old = f.url;
    f.url = URL.createObjectURL(blob);
    f.at = at;
    for (const el of imgs()) el.src = f.url;
    if (old) setTimeout(() => URL.revokeObjectURL(old), 1000);
  } catch (err) {
    for (const el of imgs()) el.alt = `No frame: ${err.message}`;
  } finally {
    // At most one fetch every 2 s per camera.
    await new Promise((r) => setTimeout(r, 2000));
    f.busy = false;
    if (f.again) {
      f.again = false;
      if (f.want !== f.at && state.view === 'devices') void refreshFrame(id, f.want);
    }
  }
}

/** A frame for the chat: its own blob URL, kept with the message. */
export async function chatFrame(entityId, container) {
  const e = state.devices.get(entityId);
  const fig = h('figure', { class: 'chat-frame' });
  container.append(fig);
  try {
    const { blob, headers } = await fetchBlob(`/api/devices/${encodeURIComponent(entityId)}/frame`);
    const url = URL.createObjectURL(blob);
    fig.append(
      h('img', { src: url, alt: `Latest frame from ${e?.name ?? entityId}` }),
      h('figcaption', {}, `${e?.name ?? entityId}${headers.get('x-frame-at') ? ` · ${fmtTime(headers.get('x-frame-at'))}` : ''}`),
    );
  } catch (err) {
    fig.append(h('figcaption', {}, `No frame from ${entityId}: ${err.message}`));
  }
}
