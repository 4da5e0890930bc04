// The consent page's two files, served like the main page (same folder, the
// same Content-Security-Policy: nothing from anywhere else, no framing).
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { notFound } from '../errors.js';
import { PAGE_CSP, PAGE_DIR } from '../page.js';
import type { Route } from '../route.js';
import { AUTHORIZE_PATH } from './endpoints.js';

const FILES: Array<[path: string, file: string, type: string]> = [
  [AUTHORIZE_PATH, 'consent.html', 'text/html; charset=utf-8'],
  ['/oauth/consent.js', 'consent.js', 'text/javascript; charset=utf-8'],
];

export function consentPageRoutes(): Route[] {
  return FILES.map(([path, file, type]) => ({
    method: 'GET' as const,
    path,
    auth: false,
    handler: async ({ res }) => {
      let body: Buffer;
      try {
        body = await readFile(resolve(PAGE_DIR, file));
      } catch (err) {
        throw notFound(`the consent page file ${file} is missing from ${PAGE_DIR} (${(err as NodeJS.ErrnoException).code}); reinstall @hearth-bridge/hearth`);
      }
      res.writeHead(200, {
        'content-type': type,
        'content-length': body.length,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'content-security-policy': PAGE_CSP,
        'x-frame-options': 'DENY',
        'cross-origin-opener-policy': 'same-origin',
      });
      res.end(body);
      return undefined;
    },
  }));
}
