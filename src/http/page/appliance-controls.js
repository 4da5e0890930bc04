// Controls of the kinds #31 added (scenes, robot vacuums and mowers, sirens, humidifiers, water heaters,
// firmware updates, texts and messages), drawn with the card's own helpers (controls.js). Returns whether it drew them.
import { h, state } from './shared.js';

/** Append this entity's controls to `box`; false for a kind it does not know. */
export function applianceControls(e, { box, may, props, off, button, toggle, slider, addButtons, addPercentSlider, addChoice, addInputAndButton, call }) {
  switch (e.kind) {
    case 'scene':
      if (may('activate')) box.append(button('Activate', {}, { dataset: { control: 'activate' } }));
      break;
    case 'vacuum':
    case 'lawn_mower':
      addButtons([
        ['start', 'Start'],
        ['start_mowing', 'Start mowing'],
        ['pause', 'Pause'],
        ['stop', 'Stop'],
        ['return_to_base', 'Return to base'],
        ['dock', 'Dock'],
        ['clean_spot', 'Clean spot'],
        ['locate', 'Locate'],
      ]);
      addChoice('Fan speed', 'fan_speed', 'fan_speed', 'set_fan_speed', e.attributes?.fan_speed);
      break;
    case 'siren':
      box.append(toggle() ?? '');
      addChoice('Sound', 'tone', 'tone', 'turn_on', e.attributes?.tone);
      break;
    case 'humidifier':
      box.append(toggle() ?? '');
      addPercentSlider('Humidity', 'humidity', 'humidity', 'set_humidity', 50);
      addChoice('Mode', 'mode', 'mode', 'set_mode', e.attributes?.mode);
      break;
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
      addChoice('Mode', 'mode', 'mode', 'set_mode', e.value);
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
      addInputAndButton(input, e.kind === 'text' ? 'Set' : 'Send', e.kind === 'text' ? 'set-text' : 'send', async () => {
        await call(e, { [key]: input.value }, e.kind === 'text' ? 'Set text' : 'Send');
        // A message sent is gone from the box (a second press would send it again); a display keeps its text.
        if (e.kind === 'notify' && state.controlStatus.get(e.id)?.outcome === 'confirmed') input.value = '';
      });
      break;
    }
    default:
      return false;
  }
  return true;
}
