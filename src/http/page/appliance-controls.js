// Controls of the kinds #31 added (scenes, robot vacuums and mowers, sirens, humidifiers, water heaters,
// firmware updates, texts and messages), drawn with the card's own helpers (controls.js). Returns whether it drew them.
import { h, state } from './shared.js';

/** Append this entity's controls to `box`; false for a kind it does not know. */
export function applianceControls(e, { ctl, box, may, props, off, button, toggle, slider, choice, call }) {
  switch (e.kind) {
    case 'scene':
      if (may('activate')) box.append(button('Activate', {}, { dataset: { control: 'activate' } }));
      break;
    case 'vacuum':
    case 'lawn_mower': {
      const row = h('div', { class: 'buttons' });
      for (const [a, label] of [
        ['start', 'Start'],
        ['start_mowing', 'Start mowing'],
        ['pause', 'Pause'],
        ['stop', 'Stop'],
        ['return_to_base', 'Return to base'],
        ['dock', 'Dock'],
        ['clean_spot', 'Clean spot'],
        ['locate', 'Locate'],
      ])
        if (ctl.actions[a] && may(a)) row.append(button(label, { action: a }));
      box.append(row);
      if (props.fan_speed?.enum && may('set_fan_speed'))
        box.append(choice('Fan speed', 'fan_speed', props.fan_speed.enum, e.attributes?.fan_speed, (v) => ({ action: 'set_fan_speed', fan_speed: v })));
      break;
    }
    case 'siren': {
      box.append(toggle() ?? '');
      if (props.tone?.enum && may('turn_on')) box.append(choice('Sound', 'tone', props.tone.enum, e.attributes?.tone, (v) => ({ action: 'turn_on', tone: v })));
      break;
    }
    case 'humidifier': {
      box.append(toggle() ?? '');
      if (props.humidity && may('set_humidity')) {
        box.append(
          slider(
            'Humidity',
            'humidity',
            { min: props.humidity.minimum ?? 0, max: props.humidity.maximum ?? 100, value: e.attributes?.humidity ?? 50, unit: '%' },
            (v) => ({ action: 'set_humidity', humidity: v }),
          ),
        );
      }
      if (props.mode?.enum && may('set_mode'))
        box.append(choice('Mode', 'mode', props.mode.enum, e.attributes?.mode, (v) => ({ action: 'set_mode', mode: v })));
      break;
    }
    case 'water_heater': {
      const t = props.temperature;
      if (t && may('set_temperature')) {
        const cur = typeof e.attributes?.temperature === 'number' ? e.attributes.temperature : Math.round((t.minimum + t.maximum) / 2);
        box.append(
          slider('Target', 'target', { min: t.minimum, max: t.maximum, step: t.multipleOf ?? 1, value: cur, unit: e.unit ? ` ${e.unit}` : '' }, (v) => ({
            action: 'set_temperature',
            temperature: v,
          })),
        );
      }
      if (props.mode?.enum && may('set_mode')) box.append(choice('Mode', 'mode', props.mode.enum, e.value, (v) => ({ action: 'set_mode', mode: v })));
      break;
    }
    case 'update':
      // Installing needs a person (migration 0015): the card says it waits for approval once pressed.
      if (may('install')) {
        const latest = e.attributes?.latest_version;
        const label = latest && latest !== e.value ? `Install ${latest}` : 'Install';
        box.append(button(label, { action: 'install' }, { dataset: { control: 'install' }, disabled: off || e.attributes?.in_progress === true }));
      }
      break;
    case 'text':
    case 'notify': {
      const key = e.kind === 'text' ? 'text' : 'message';
      const spec = props[key];
      if (!spec || !may(e.kind === 'text' ? 'set_text' : 'send_message')) break;
      const input = h('input', {
        type: 'text',
        maxlength: spec.maxLength,
        value: e.kind === 'text' ? (e.value ?? '') : '',
        placeholder: e.kind === 'text' ? '' : 'Message',
        'aria-label': `${e.kind === 'text' ? 'Text for' : 'Message to'} ${e.name}`,
        disabled: off,
        dataset: { control: key },
      });
      box.append(
        h(
          'div',
          { class: 'buttons' },
          input,
          h(
            'button',
            {
              type: 'button',
              class: 'small',
              disabled: off,
              dataset: { control: e.kind === 'text' ? 'set-text' : 'send' },
              onclick: async () => {
                await call(e, { [key]: input.value }, e.kind === 'text' ? 'Set text' : 'Send');
                // A message sent is gone from the box (a second press would send it again); a display keeps its text.
                if (e.kind === 'notify' && state.controlStatus.get(e.id)?.outcome === 'confirmed') input.value = '';
              },
            },
            e.kind === 'text' ? 'Set' : 'Send',
          ),
        ),
      );
      break;
    }
    default:
      return false;
  }
  return true;
}
