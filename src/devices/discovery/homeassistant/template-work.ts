// How much template work one topic may cause per second. Each render has its own budget (templates.ts), but a
// device can send a 240 KB payload through a template at its budget a hundred times a second: calls then wait
// behind the renders. So the work of every render is also charged to the topic it came from, against a budget
// that refills at TEMPLATE_WORK_PER_SECOND; a topic over it has its messages skipped (logged as over_budget)
// until it has refilled. One topic per state is the usual case (a device's entities share it).
import { MAX_WORK } from './templates.js';

/** Work units one topic may spend per second on average: two full-budget renders. */
export const TEMPLATE_WORK_PER_SECOND = 2 * MAX_WORK;
/** What a quiet topic may spend at once. */
const BURST = 4 * MAX_WORK;
const MAX_TOPICS = 20_000;

const accounts = new Map<string, { balance: number; at: number }>();

/** Whether a render for this topic may run now (its account is not overdrawn). */
export function mayRender(topic: string, now = Date.now()): boolean {
  const a = accounts.get(topic);
  if (!a) return true;
  a.balance = Math.min(BURST, a.balance + ((now - a.at) / 1000) * TEMPLATE_WORK_PER_SECOND);
  a.at = now;
  return a.balance > 0;
}

/** Charge a finished render's cost to its topic. */
export function chargeRender(topic: string, cost: number, now = Date.now()): void {
  let a = accounts.get(topic);
  if (!a) {
    if (accounts.size >= MAX_TOPICS) accounts.clear();
    accounts.set(topic, (a = { balance: BURST, at: now }));
  }
  a.balance -= cost;
}
