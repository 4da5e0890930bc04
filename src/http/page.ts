// The web page: plain HTML, CSS and a few JS modules from src/http/page/ (no
// build step: the browser loads app.js, which imports the others), served at / by `hearth start`. The files hold no secrets, so
// they need no token; the page asks for one and sends it to /api/*. They are
// read from the package root, so `node dist/...` and tsx serve the same files.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { PACKAGE_ROOT } from '../bridge.js';
import { notFound } from './errors.js';
import type { ApiContext, Route } from './route.js';

export const PAGE_DIR = resolve(PACKAGE_ROOT, 'src', 'http', 'page');

/** The page's ES modules, by concern; app.js is the entry that index.html loads. */
export const PAGE_MODULES = [
  'app.js',
  'shared.js',
  'values.js',
  'devices.js',
  'entity-card.js',
  'home.js',
  'areas.js',
  'controls.js',
  'appliance-controls.js',
  'history.js',
  'chat.js',
  'speech.js',
  'approvals.js',
  'audit.js',
  'policy.js',
  'apps.js',
] as const;

const FILES: Record<string, { file: string; type: string; module?: boolean }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  ...Object.fromEntries(PAGE_MODULES.map((file) => [`/${file}`, { file, type: 'text/javascript; charset=utf-8' }])),
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
  // The chart library, from its own package (resolved like an import, so an installed Hearth finds it): no CDN, works offline.
  '/vendor/uPlot.iife.min.js': { file: 'uplot/dist/uPlot.iife.min.js', type: 'text/javascript; charset=utf-8', module: true },
  '/vendor/uPlot.min.css': { file: 'uplot/dist/uPlot.min.css', type: 'text/css; charset=utf-8', module: true },
};

const requireFromHere = createRequire(import.meta.url);

/** A file of an installed package, or the reason it cannot be found. */
function packageFile(spec: string): string {
  return requireFromHere.resolve(spec);
}

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
  const load = async (file: string, module?: boolean): Promise<Loaded> => {
    const body = await readFile(module ? packageFile(file) : resolve(dir, file));
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
  };
  return Object.entries(FILES).map(
    ([path, { file, type, module }]): Route => ({
      method: 'GET' as const,
      path,
      auth: false,
      handler: async ({ req, res }) => {
        let loaded: Loaded;
        try {
          loaded = await load(file, module);
        } catch (err) {
          if (module)
            throw notFound(
              `the chart library file ${file} is missing (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); reinstall @hearth-bridge/hearth so its dependency uplot is installed`,
            );
          throw notFound(
            `the web page file ${file} is missing from ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); reinstall @hearth-bridge/hearth`,
          );
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
    }),
  );
}
