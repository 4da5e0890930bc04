// A Homie device as Hearth reads it, whichever convention version described
// it: v4 (and v3) spread over retained `$attribute` topics, v5 in one
// `$description` JSON document.

export type HomieVersion = 4 | 5;

export interface HomieProperty {
  id: string;
  name?: string;
  /** integer, float, boolean, string, enum, color, datetime, duration (v5 adds json). */
  datatype?: string;
  format?: string;
  settable: boolean;
  /** false: momentary events, not a state. */
  retained: boolean;
  unit?: string;
}

export interface HomieNode {
  id: string;
  name?: string;
  type?: string;
  properties: HomieProperty[];
}

export interface HomieDescription {
  version: HomieVersion;
  /** The Homie device id (the topic level). */
  id: string;
  name?: string;
  nodes: HomieNode[];
}

/** `$state` words that mean the device can act. Every other word (lost, disconnected, init, sleeping) means it cannot. */
export const READY_STATES = new Set(['ready', 'alert']);
