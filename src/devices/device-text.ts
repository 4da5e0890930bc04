// Device-provided strings (names, areas, text states) are data, not
// instructions: control and invisible characters go, whitespace collapses,
// length is capped. Discovery cleans with it; tools quote the result for a model.

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;

/** Strip control and invisible formatting characters, collapse whitespace, cap length. */
export function cleanDeviceText(text: string | undefined, max = 60): string {
  if (!text) return '';
  const clean = text.replace(CONTROL, ' ').replace(/\s+/g, ' ').trim();
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}
