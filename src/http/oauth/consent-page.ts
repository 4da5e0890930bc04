// The consent page's two files, served like the main page (same folder, the
// same Content-Security-Policy: nothing from anywhere else, no framing). An
// app sends the browser here from its own site, so the page is served before
// the Origin check: it is a static file, and every answer it gets comes from
// /api/oauth/*, which the check and the owner's token guard.
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { PAGE_CSP, PAGE_DIR } from '../page.js';

export const AUTHORIZE_PATH = '/oauth/authorize';

const FILES: Record<string, { file: string; type: string }> = {
  [AUTHORIZE_PATH]: { file: 'consent.html', type: 'text/html; charset=utf-8' },
  '/oauth/consent.js': { file: 'consent.js', type: 'text/javascript; charset=utf-8' },
};

export function isConsentFile(path: string): boolean {
  return path in FILES;
}

export async function sendConsentFile(res: ServerResponse, path: string): Promise<void> {
  const { file, type } = FILES[path];
  let body: Buffer;
  try {
    body = await readFile(resolve(PAGE_DIR, file));
  } catch (err) {
    const text = `the consent page file ${file} is missing from ${PAGE_DIR} (${(err as NodeJS.ErrnoException).code}); reinstall @hearth-bridge/hearth\n`;
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(text);
    return;
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
}
