// Policy rules more than one security test sets up on the demo home.
import type { NewRule } from '../../src/policy/rules.js';

/** Guests may not read anything at the front door (the lock and the camera). */
export const GUESTS_DO_NOT_SEE_FRONT_DOOR: NewRule = {
  subject: 'role:guest',
  targetType: 'entity',
  target: 'front_door.*',
  action: 'read',
  effect: 'deny',
  note: 'test: guests do not see the front door',
};

/** Family may operate locks, so the built-in rule holds an unlock for a person; being family makes no approver. */
export const FAMILY_OPERATES_LOCKS: NewRule = {
  subject: 'role:family',
  targetType: 'kind',
  target: 'lock',
  action: 'actuate',
  effect: 'allow',
  note: 'test: family operates locks',
};
