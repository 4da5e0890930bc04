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
 * A display title made of a device-chosen name (an MCP tool or resource
 * title): cleaned and capped, and not marked (`Porch light`, `Door cam
 * (latest frame)`). Titles are for people; the descriptions a model reads
 * carry the name quoted, as device data.
 */
export function deviceTitle(name: string | undefined, what?: string): string {
  return `${cleanDeviceText(name, 60) || 'unnamed device'}${what ? ` (${what})` : ''}`;
}
