// The Living room Ceiling light as a device file lists it, for the tests that follow one light through a broker that
// goes away (test/devices/not-answering.test.ts, test/page/not-answering.test.ts): JSON commands with brightness, and
// an availability topic its last will and each connection speak on.
export const CEILING_LIGHT_ID = 'living_room_ceiling';

export interface CeilingLightTopics {
  state: string;
  set: string;
  availability: string;
}

/** The light's entry under `devices:` in a device file; the caller says its topics and how long a command may go unconfirmed. */
export function ceilingLightEntry(topics: CeilingLightTopics, confirmTimeoutMs: number): string {
  return `  - id: ${CEILING_LIGHT_ID}
    name: Ceiling light
    area: Living room
    availability: ${topics.availability}
    entities:
      light:
        kind: light
        name: Ceiling light
        state_topic: ${topics.state}
        value_path: state
        attributes: { brightness: brightness }
        command_topic: ${topics.set}
        command_format: json
        confirm_timeout_ms: ${confirmTimeoutMs}
        ranges: { brightness: { min: 0, max: 254, step: 1 } }`;
}
