// `approvals`, `approve`, `deny`: calls a confirm rule holds until a person decides. Only the control endpoint's
// own user reaches these (the endpoint is private to them); `by` names who decided, for the record.
import type { SqliteApprovals } from '../../policy/approvals.js';
import { approvalJson, notDecidableText } from '../../present/approval.js';
import type { ApprovalJson } from '../../present/approval.js';
import { localUser } from '../caller.js';
import { badParams, notDone, notFound } from '../protocol.js';
import type { DecideAnswer } from '../schema.js';

export function approvals(store: SqliteApprovals, p: { all?: boolean }, now = Date.now()): ApprovalJson[] {
  return store.list(p.all ? {} : { status: 'pending' }).map((a) => approvalJson(a, now));
}

function checkId(raw: string): string {
  const id = raw.trim();
  if (!/^[0-9a-f]{6,64}$/i.test(id)) throw badParams(`id ${JSON.stringify(raw)}: an approval id looks like 3f9a1c2b7e44 (see hearth approvals)`);
  return id.toLowerCase();
}

function checkBy(raw: string | undefined): string {
  if (raw === undefined) return localUser();
  const by = raw.trim();
  if (!by || /[\u0000-\u001f]/.test(by)) throw badParams(`by ${JSON.stringify(raw)}: must be a name of 1 to 200 printable characters`);
  return by;
}

export function decide(store: SqliteApprovals, verb: 'approve' | 'deny', p: { id: string; by?: string }): DecideAnswer {
  const id = checkId(p.id);
  const by = checkBy(p.by);
  const before = store.get(id);
  if (!before) throw notFound(`no approval ${id}; pending ones: hearth approvals`);
  if (before.status !== 'pending') throw notDone(notDecidableText(before));
  const ok = verb === 'approve' ? store.grant(id, by) : store.deny(id, by);
  const after = store.get(id)!;
  if (!ok) throw notDone(notDecidableText(after));
  return { decision: verb === 'approve' ? 'approved' : 'denied', by, approval: approvalJson(after) };
}
