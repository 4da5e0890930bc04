// What makes a home this one: where its devices come from, which broker, and a digest of each setting section
// that changes answers. A client that asks for another home runs on its own.
import { createHash } from 'node:crypto';
import { demoEnabled, type Bridge } from '../bridge.js';
import type { HearthConfig } from '../config/schema.js';
import { redact } from '../mqtt/connection.js';
import type { HomeShape } from './schema.js';

/** The setting sections besides broker, devices and demo whose values change what a method answers. */
export const ANSWER_SECTIONS = ['discovery', 'audit', 'tools', 'agent'] as const;

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** No secrets leave the daemon: only digests of the sections. */
export function sectionDigests(config: HearthConfig): Record<string, string> {
  return Object.fromEntries(ANSWER_SECTIONS.map((k) => [k, createHash('sha256').update(canonical(config[k])).digest('hex').slice(0, 16)]));
}

export function homeOf(bridge: Bridge): HomeShape {
  return { devices: bridge.paths, broker: redact(bridge.connection.options.url), demo: demoEnabled(bridge.config), sections: sectionDigests(bridge.config) };
}
