// Why a discovered thing produced no tool (or only part of one). Every expose,
// property or device a discovery adapter passes over gets one of these, and
// the adapter logs them.

export interface Skip {
  /** The property, expose or device passed over (`color_xy`, `state_l1`, `light/power`). */
  what: string;
  /** A short stable code: `composite`, `list`, `odd_payload`, ... */
  reason: string;
  /** One sentence for a person reading the log. */
  detail: string;
  /** Its readable part still became an entity; only control (or an attribute) was dropped. */
  partial?: boolean;
}

/** `{reason: [what, ...]}` for one log line. */
export function groupSkips(skips: Skip[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const s of skips) (out[s.reason] ??= []).push(s.what);
  return out;
}
