// A card's controls (what the policy could let this principal do) and the
// result of a call on the card.
import { api, fmtValue, h, outcomeBadge, state } from './shared.js';
import { applianceControls } from './appliance-controls.js';
import { brightnessPct, COLOR_WORDS, cap, SWATCHES, hex, kelvinOf, lightRgb } from './values.js';

// ------------------------------------------------------------------ controls

export async function loadControls() {
  try {
    const r = await api('GET', '/api/controls');
    state.controls = new Map(Object.entries(r.controls));
  } catch (err) {
    if (err.status !== 401) console.warn('controls', err);
  }
}

/** The controls of one card: only those the policy could ever let this principal use; the rest are named with the reason. */
export function controlsFor(e, ctl) {
  if (!ctl) return null;
  const may = (a) => ctl.actions[a]?.may === true;
  const props = ctl.properties ?? {};
  const off = e.available === false;
  const box = h('div', { class: 'controls', role: 'group', 'aria-label': `Controls for ${e.name}` });
  const button = (label, args, attrs = {}) =>
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        disabled: off,
        dataset: { control: args.action ?? label.toLowerCase() },
        onclick: () => callControl(e, args, label),
        ...attrs,
      },
      label,
    );
  const toggle = (onAction = 'turn_on', offAction = 'turn_off') => {
    const isOn = e.value === 'on';
    const next = isOn ? offAction : onAction;
    if (!may(next)) return null;
    return h(
      'button',
      {
        type: 'button',
        class: `toggle${isOn ? ' on' : ''}`,
        role: 'switch',
        'aria-checked': String(isOn),
        'aria-label': `${e.name}: ${isOn ? 'on' : 'off'}`,
        disabled: off,
        dataset: { control: 'toggle' },
        onclick: () => callControl(e, { action: next }, isOn ? 'Turn off' : 'Turn on'),
      },
      h('span', { class: 'knob', 'aria-hidden': 'true' }),
      isOn ? 'On' : 'Off',
    );
  };
  /** A slider that calls once on release (not on every step). */
  const slider = (label, control, { min, max, step = 1, value, unit = '' }, toArgs) => {
    const out = h('output', {}, `${value}${unit}`);
    const input = h('input', { type: 'range', min, max, step, value, disabled: off, 'aria-label': `${label} of ${e.name}`, dataset: { control } });
    input.addEventListener('input', () => (out.textContent = `${input.value}${unit}`));
    input.addEventListener('pointerdown', () => (state.dragging = e.id));
    // A press that moved nothing fires no change: let the card be redrawn again anyway.
    for (const ev of ['pointerup', 'pointercancel', 'blur'])
      input.addEventListener(ev, () => setTimeout(() => state.dragging === e.id && (state.dragging = null), 0));
    input.addEventListener('change', () => {
      state.dragging = null;
      callControl(e, toArgs(Number(input.value)), `${label} ${input.value}${unit}`);
    });
    return h('label', { class: 'slider' }, h('span', {}, label), input, out);
  };
  /** A row of buttons, one for each of these actions the device has and this principal may use. */
  const addButtons = (actions) => {
    const row = h('div', { class: 'buttons' });
    for (const [a, label] of actions) if (ctl.actions[a] && may(a)) row.append(button(label, { action: a }));
    box.append(row);
  };
  /** A percent slider for the property `key` that `action` sets (bounds from the tool's schema, 0-100 without). */
  const addPercentSlider = (label, control, key, action, fallback) => {
    const spec = props[key];
    if (!spec || !may(action)) return;
    box.append(
      slider(label, control, { min: spec.minimum ?? 0, max: spec.maximum ?? 100, value: e.attributes?.[key] ?? fallback, unit: '%' }, (v) => ({
        action,
        [key]: v,
      })),
    );
  };
  /** A field and the button that sends what is in it. */
  const addInputAndButton = (input, label, control, onclick) =>
    box.append(h('div', { class: 'buttons' }, input, h('button', { type: 'button', class: 'small', disabled: off, dataset: { control }, onclick }, label)));
  /** A list of the values of the property `key` that `action` sets, showing `current`. */
  const addChoice = (label, control, key, action, current) => {
    if (props[key]?.enum && may(action)) box.append(choice(label, control, props[key].enum, current, (v) => ({ action, [key]: v })));
  };
  switch (e.kind) {
    case 'switch':
      box.append(toggle() ?? '');
      break;
    case 'light': {
      box.append(toggle() ?? '');
      if (props.brightness_pct && may('turn_on')) {
        const b = typeof e.attributes?.brightness === 'number' && e.value === 'on' ? brightnessPct(e.attributes.brightness, ctl.scale?.brightness?.max) : 0;
        // The tool takes percent (brightness_pct) and puts it on the light's own scale.
        box.append(slider('Brightness', 'brightness', { min: 1, max: 100, value: b, unit: '%' }, (pct) => ({ action: 'turn_on', brightness_pct: pct })));
      }
      if (props.color_temp_kelvin && may('turn_on')) {
        const { minimum: min, maximum: max } = props.color_temp_kelvin;
        const clamp = (k) => Math.min(max, Math.max(min, k));
        const mode = e.attributes?.color_mode;
        if (mode === undefined || mode === 'color_temp') {
          // Read in round kelvin (370 mireds is "2700 K", not "2703 K").
          const now =
            typeof e.attributes?.color_temp === 'number' && e.attributes.color_temp > 0
              ? Math.round(kelvinOf(e.attributes.color_temp) / 50) * 50
              : Math.round((min + max) / 100) * 50;
          box.append(
            slider('Colour temperature', 'color-temp', { min, max, step: 10, value: clamp(now), unit: ' K' }, (k) => ({
              action: 'turn_on',
              color_temp_kelvin: clamp(k),
            })),
          );
        } else {
          // In colour mode the slider would read a stale white: one button goes back to white light, then it shows.
          box.append(
            button(
              'White light',
              { action: 'turn_on', color_temp_kelvin: clamp(4000) },
              { dataset: { control: 'color-temp-mode' }, title: 'Back to white light (4000 K), with its colour-temperature slider' },
            ),
          );
        }
      }
      if (props.color && may('turn_on')) {
        const rgb = lightRgb(e.attributes ?? {});
        const swatches = h('div', { class: 'swatches', role: 'group', 'aria-label': `Colour of ${e.name}` });
        for (const name of SWATCHES) {
          swatches.append(
            h('button', {
              type: 'button',
              class: 'swatch-btn',
              style: { background: hex(COLOR_WORDS[name] ?? [255, 244, 229]) },
              title: name,
              'aria-label': `Colour ${name}`,
              disabled: off,
              dataset: { control: `color-${name.replace(/ /g, '-')}` },
              onclick: () => callControl(e, { action: 'turn_on', color: name }, `Colour ${name}`),
            }),
          );
        }
        const picker = h('input', {
          type: 'color',
          value: rgb ? hex(rgb) : '#ffffff',
          'aria-label': `Pick any colour for ${e.name}`,
          disabled: off,
          dataset: { control: 'color-picker' },
        });
        picker.addEventListener('change', () => callControl(e, { action: 'turn_on', color: picker.value }, `Colour ${picker.value}`));
        swatches.append(picker);
        box.append(swatches);
      }
      break;
    }
    case 'fan':
      box.append(toggle() ?? '');
      addPercentSlider('Speed', 'speed', 'percentage', 'set_percentage', 0);
      addChoice('Preset', 'preset', 'preset_mode', 'set_preset_mode', e.attributes?.preset_mode);
      break;
    case 'climate': {
      const t = props.temperature;
      if (t && may('set_temperature')) {
        const step = t.multipleOf ?? 0.5;
        const cur = typeof e.attributes?.temperature === 'number' ? e.attributes.temperature : (t.minimum + t.maximum) / 2;
        const set = (v) =>
          callControl(e, { action: 'set_temperature', temperature: Math.min(t.maximum, Math.max(t.minimum, Math.round(v / step) * step)) }, `Target ${v}`);
        box.append(
          h(
            'div',
            { class: 'stepper', role: 'group', 'aria-label': `Target temperature of ${e.name}` },
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': 'Lower the target',
                disabled: off || cur <= t.minimum,
                dataset: { control: 'target-down' },
                onclick: () => set(cur - step),
              },
              '−',
            ),
            h('span', { class: 'target' }, `${fmtValue(cur)}${e.unit ? ` ${e.unit}` : ''}`),
            h(
              'button',
              {
                type: 'button',
                class: 'small',
                'aria-label': 'Raise the target',
                disabled: off || cur >= t.maximum,
                dataset: { control: 'target-up' },
                onclick: () => set(cur + step),
              },
              '+',
            ),
          ),
        );
      }
      addChoice('Mode', 'mode', 'mode', 'set_mode', e.value);
      break;
    }
    case 'cover':
    case 'valve':
      addButtons([
        ['open', 'Open'],
        ['stop', 'Stop'],
        ['close', 'Close'],
      ]);
      addPercentSlider('Position', 'position', 'position', 'set_position', 0);
      break;
    case 'lock':
      addButtons([
        ['lock', 'Lock'],
        ['unlock', 'Unlock'],
        ['open', 'Open'],
      ]);
      break;
    case 'select':
      if (props.option?.enum && may('select_option')) box.append(choice('Option', 'option', props.option.enum, e.value, (v) => ({ option: v })));
      break;
    case 'number':
      if (props.value && may('set_value')) {
        const input = h('input', {
          type: 'number',
          min: props.value.minimum,
          max: props.value.maximum,
          step: props.value.multipleOf ?? 'any',
          value: e.value ?? '',
          'aria-label': `New value for ${e.name}`,
          disabled: off,
          dataset: { control: 'number' },
        });
        addInputAndButton(input, 'Set', 'set-number', () => callControl(e, { value: Number(input.value) }, `Set ${input.value}`));
      }
      break;
    case 'button':
      if (may('press')) box.append(button('Press', {}, { dataset: { control: 'press' } }));
      break;
    default: {
      // Robots, sirens, scenes, humidity, hot water, texts and messages (#31): their own module.
      if (applianceControls(e, { box, may, props, off, button, toggle, slider, addButtons, addPercentSlider, addChoice, addInputAndButton, call: callControl }))
        break;
      const row = h('div', { class: 'buttons' });
      for (const a of Object.keys(ctl.actions)) if (may(a)) row.append(button(cap(a), { action: a }));
      box.append(row);
    }
  }
  const cannot = Object.entries(ctl.actions).filter(([, v]) => !v.may);
  if (cannot.length) {
    box.append(
      h(
        'p',
        { class: 'cannot', dataset: { cannot: cannot.map(([a]) => a).join(' ') } },
        cannot.length === Object.keys(ctl.actions).length ? 'View only: ' : `Not for you: ${cannot.map(([a]) => a.replace(/_/g, ' ')).join(', ')}. `,
        cannot[0][1].why ?? '',
      ),
    );
  }
  if (off) box.append(h('p', { class: 'cannot' }, 'Offline: nothing can be sent until it is back.'));
  return box.childElementCount ? box : null;
}

function choice(label, control, options, current, toArgs) {
  const id = `${control}-${Math.random().toString(36).slice(2, 8)}`;
  const select = h(
    'select',
    // `shown`: the device's value when drawn; a different value is the person's choice, not yet Set.
    { id, dataset: { control, shown: String(current ?? '') } },
    options.map((o) => h('option', { value: o, selected: o === current }, cap(o))),
  );
  return h(
    'label',
    { class: 'choice', for: id },
    h('span', {}, label),
    select,
    h(
      'button',
      {
        type: 'button',
        class: 'small',
        dataset: { control: `${control}-set` },
        onclick: () => callControlById(select.closest('.entity')?.dataset.entity, toArgs(select.value), `${label} ${select.value.replace(/_/g, ' ')}`),
      },
      'Set',
    ),
  );
}

function callControlById(id, args, label) {
  const e = state.devices.get(id);
  if (e) void callControl(e, args, label);
}

function setControlStatus(id, outcome, text, full = text) {
  state.controlStatus.set(id, { outcome, text, full, at: Date.now() });
  const card = document.querySelector(`.entity[data-entity="${CSS.escape(id)}"]`);
  const el = card?.querySelector('.control-status');
  if (el) el.replaceChildren(...statusParts(state.controlStatus.get(id)));
}

export function statusParts(status) {
  return [outcomeBadge(status.outcome), ' ', h('span', { class: 'status-text', title: status.full }, status.text)];
}

/** Run one control through the pipeline as this principal; the result shows as in chat. */
async function callControl(e, args, label) {
  setControlStatus(e.id, 'running', `${label}…`);
  try {
    const r = await api('POST', `/api/devices/${encodeURIComponent(e.id)}/call`, { args });
    // Short on the card (the whole result on hover), as a chat tool card shows it.
    const why = r.text.replace(/^(confirmed|unconfirmed|failed|not allowed|needs approval|not done):\s*/i, '');
    const words =
      r.outcome === 'held'
        ? `${label}: held, waiting for approval; an approver sees it now`
        : r.outcome === 'confirmed'
          ? label
          : r.outcome === 'unconfirmed'
            ? `${label}: sent, the device did not report back in time`
            : `${label}: ${why.length > 160 ? `${why.slice(0, 159)}…` : why}`;
    setControlStatus(e.id, r.outcome, words, r.text);
    if (r.outcome === 'held' && r.approvalId) state.waiting.set(r.approvalId, { id: e.id, args, label });
  } catch (err) {
    setControlStatus(e.id, 'failed', `${label}: ${err.message}`);
  }
}

/** A held control whose approval was decided: granted runs the same call again (it uses the approval up). */
export function onControlApproval(a) {
  const w = state.waiting.get(a.id);
  if (!w || a.status === 'pending') return;
  state.waiting.delete(a.id);
  const e = state.devices.get(w.id);
  if (a.status === 'granted' && e) void callControl(e, w.args, w.label);
  else setControlStatus(w.id, 'denied', `${w.label}: ${a.status} by ${a.decidedByName ?? a.decidedBy ?? 'an approver'}`);
}
