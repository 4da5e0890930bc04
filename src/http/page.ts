// The web page: plain HTML, CSS and one JS module from src/http/page/ (no
// build step), served at / by `hearth start`. The files hold no secrets, so
// they need no token; the page asks for one and sends it to /api/*. They are
// read from the package root, so `node dist/...` and tsx serve the same files.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { PACKAGE_ROOT } from '../bridge.js';
import { notFound } from './errors.js';
import type { ApiContext, Route } from './route.js';

export const PAGE_DIR = resolve(PACKAGE_ROOT, 'src', 'http', 'page');

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
};

/** Everything from this origin, nothing from anywhere else; camera frames arrive as blob: URLs. */
export const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "connect-src 'self'",
  "media-src 'self' blob:",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface Loaded {
  body: Buffer;
  etag: string;
}

export function pageRoutes(_ctx: ApiContext, dir = PAGE_DIR): Route[] {
  // Read on every request (they are small): an edited file shows on the next reload, with no build step.
  const load = async (file: string): Promise<Loaded> => {
    const body = await readFile(resolve(dir, file));
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
  };
  return Object.entries(FILES).map(([path, { file, type }]): Route => ({
    method: 'GET' as const,
    path,
    auth: false,
    handler: async ({ req, res }) => {
      let loaded: Loaded;
      try {
        loaded = await load(file);
      } catch (err) {
        throw notFound(`the web page file ${file} is missing from ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); reinstall hearth-bridge`);
      }
      const headers: Record<string, string | number> = {
        'cache-control': 'no-cache',
        etag: loaded.etag,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'content-security-policy': PAGE_CSP,
        'x-frame-options': 'DENY',
        'cross-origin-opener-policy': 'same-origin',
        'permissions-policy': 'camera=(), geolocation=(), microphone=(self)',
      };
      if (req.headers['if-none-match'] === loaded.etag) {
        res.writeHead(304, headers);
        res.end();
        return undefined;
      }
      res.writeHead(200, { ...headers, 'content-type': type, 'content-length': loaded.body.length });
      res.end(loaded.body);
      return undefined;
    },
  }));
}
