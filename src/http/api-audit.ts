// The audit log over HTTP, for the web page and other readers:
//   GET /api/audit?principal&entity&outcome&since&until&limit&afterId&beforeId&order
//   GET /api/audit/verify            the hash chain (and digest) check
//   GET /api/audit/export?format=jsonl|csv&since&until   a download
//   GET /api/audit/:id
// Owners see every row; anyone else only the rows of their own calls (the
// rule /api/events follows). Verifying and exporting the whole log is for owners.
import { auditRowJson } from '../present/audit-row.js';
import type { ServerResponse } from 'node:http';
import { OUTCOMES } from '../audit/row.js';
import type { Outcome } from '../audit/types.js';
import { parseTimeFilter } from '../util/time.js';
import { badField, forbidden, notFound } from './errors.js';
import { isOwner, type ApiContext, type Route } from './route.js';

const INT_RE = /^\d{1,15}$/;

function intParam(query: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  if (!INT_RE.test(raw) || Number(raw) < min || Number(raw) > max)
    throw badField(name, `must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw.slice(0, 40))}`);
  return Number(raw);
}

/** A time filter (ISO 8601 or epoch ms, 2000 to 9999), normalised to the stored form; else a 400 naming it. */
function timeParam(query: URLSearchParams, name: string): string | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  const t = parseTimeFilter(raw);
  if (t instanceof Error) throw badField(name, t.message);
  return t;
}

/** since and until, checked together. */
function timeRange(query: URLSearchParams): { since?: string; until?: string } {
  const since = timeParam(query, 'since');
  const until = timeParam(query, 'until');
  if (since && until && until < since) throw badField('until', `${until} is before since (${since})`);
  return { since, until };
}

function stringParam(query: URLSearchParams, name: string, max = 200): string | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  if (raw.length > max) throw badField(name, `must be at most ${max} characters`);
  return raw;
}

/** Write lines with backpressure; stops early when the client goes away. */
async function writeLines(res: ServerResponse, lines: Iterable<string>): Promise<void> {
  for (const line of lines) {
    if (res.destroyed) return;
    if (!res.write(`${line}\n`)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  res.end();
}

export function auditRoutes({ hearth }: ApiContext): Route[] {
  const audit = hearth.audit;
  return [
    {
      method: 'GET',
      path: '/api/audit',
      handler: ({ query, principal }) => {
        const outcomeRaw = stringParam(query, 'outcome', 40);
        if (outcomeRaw !== undefined && !OUTCOMES.includes(outcomeRaw as Outcome))
          throw badField('outcome', `must be one of ${OUTCOMES.join(', ')}, got ${JSON.stringify(outcomeRaw)}`);
        const order = stringParam(query, 'order', 10) ?? 'desc';
        if (order !== 'asc' && order !== 'desc') throw badField('order', `must be asc or desc, got ${JSON.stringify(order)}`);
        let who = stringParam(query, 'principal');
        if (!isOwner(principal)) {
          if (who !== undefined && who !== principal.id) throw forbidden(`only an owner may read another principal's audit rows; ${principal.id} sees its own`);
          who = principal.id;
        }
        const { since, until } = timeRange(query);
        return audit
          .list({
            principal: who,
            entityId: stringParam(query, 'entity'),
            outcome: outcomeRaw as Outcome | undefined,
            since,
            until,
            afterId: intParam(query, 'afterId', 0, Number.MAX_SAFE_INTEGER),
            beforeId: intParam(query, 'beforeId', 1, Number.MAX_SAFE_INTEGER),
            limit: intParam(query, 'limit', 1, 1000) ?? 100,
            order,
          })
          .map(auditRowJson);
      },
    },
    {
      method: 'GET',
      path: '/api/audit/verify',
      handler: ({ principal }) => {
        const result = audit.verify();
        // The chain's state is no secret, but where it breaks and the digest are for owners.
        if (!isOwner(principal)) return { ok: result.ok };
        return { ...result, checkedAt: new Date().toISOString() };
      },
    },
    {
      method: 'GET',
      path: '/api/audit/export',
      handler: async ({ query, principal, res }) => {
        const format = stringParam(query, 'format', 10) ?? 'jsonl';
        if (format !== 'jsonl' && format !== 'csv') throw badField('format', `must be jsonl or csv, got ${JSON.stringify(format)}`);
        if (!isOwner(principal)) throw forbidden(`only an owner may export the audit log; ${principal.id} can list its own rows with GET /api/audit`);
        const { since, until } = timeRange(query);
        // Checked (and the first page read) before any header is sent, so a problem is still a JSON error.
        const lines = audit.export(format, { since, until });
        const stamp = new Date().toISOString().replace(/[:.]/g, '-');
        res.writeHead(200, {
          'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
          'content-disposition': `attachment; filename="hearth-audit-${stamp}.${format}"`,
          'cache-control': 'no-store',
          'x-content-type-options': 'nosniff',
        });
        await writeLines(res, lines);
        return undefined;
      },
    },
    {
      method: 'GET',
      path: '/api/audit/:id',
      handler: ({ params, principal }) => {
        if (!INT_RE.test(params.id)) throw notFound(`no audit row ${JSON.stringify(params.id.slice(0, 40))}: rows have whole-number ids`);
        const row = audit.get(Number(params.id));
        // A row of someone else's is "not found" for a non-owner: the answer tells nothing.
        if (!row || (!isOwner(principal) && row.principal !== principal.id)) throw notFound(`no audit row ${params.id}`);
        return auditRowJson(row);
      },
    },
  ];
}
