// Device-provided strings (names, areas, text states) are data, not
// instructions: control characters go, length is capped, and they reach the
// model only inside quotes.

// Cleaning lives with the devices (discovery uses it too); quoting for a model lives here.
import { cleanDeviceText } from '../devices/device-text.js';

export { cleanDeviceText };

/** A device string as quoted data. */
export function quoted(text: string | undefined, max = 60): string {
  return JSON.stringify(cleanDeviceText(text, max));
}

/**
 * A device word (a mode, a preset, a unit, a device class): bare when it is
 * one short token (`heat`, `heat_cool`, `°C`, `µg/m³`), else quoted data like
 * any other device string, so that a sentence never reaches the model unquoted.
 */
export function deviceWord(text: string | undefined, max = 24): string {
  const clean = cleanDeviceText(text, 200);
  return clean.length <= max && /^[\p{L}\p{N}°%µ²³/._-]+$/u.test(clean) ? clean : quoted(clean, 60);
}

/**
 * A title made of a device-chosen name (an MCP tool or resource title):
 * cleaned, quoted and labelled, so a client that shows it to a model shows
 * it as data (`device name "Porch light"`, `device name "Door cam" (latest frame)`).
 */
export function deviceTitle(name: string | undefined, what?: string): string {
  return `device name ${quoted(name)}${what ? ` (${what})` : ''}`;
}
