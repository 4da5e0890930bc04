// Device-provided strings (names, areas, text states) are data, not
// instructions: control and invisible characters go (Unicode tags too: they can
// spell hidden text), whitespace collapses, length is capped. Discovery cleans
// with it; tools quote the result for a model.
import { cleanUntrustedText } from '../util/untrusted-text.js';

/** Strip control and invisible formatting characters, collapse whitespace, cap length. */
export function cleanDeviceText(text: string | undefined, max = 60): string {
  return cleanUntrustedText(text, max);
}
