/// <reference lib="dom" />
// Headless Chromium for the page tests: where Chromium is, the flags it runs with, and a page signed in with
// a token at a viewport, whose page errors, console errors and requests outside the server are collected.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { ROOT } from './cli.js';

/** Where the page tests put their screenshots. */
export const PAGE_ARTIFACTS = join(ROOT, 'test', 'artifacts', 'page');

const CHROMIUM_CANDIDATES = [
  process.env.HEARTH_CHROMIUM,
  '/usr/bin/chromium-headless-shell',
  '/usr/bin/chromium',
  '/usr/lib/chromium/chromium-headless-shell',
  '/usr/lib/chromium/chromium',
].filter((p): p is string => !!p);

/** The Chromium the page tests drive, or undefined when none is installed (findChromium says what to do). */
export const CHROMIUM = CHROMIUM_CANDIDATES.find((p) => existsSync(p));

/** Debian's Chromium, or a clear failure: a page test is never skipped silently. */
export function findChromium(): string {
  if (!CHROMIUM) {
    throw new Error(
      `Chromium is not installed (looked for ${CHROMIUM_CANDIDATES.join(', ')}). The web page tests need it: ` +
        'run `bash .ci/run` (it installs it), or `apt-get install -y --no-install-recommends chromium-headless-shell` ' +
        '(or `chromium`), or point HEARTH_CHROMIUM at a Chromium binary.',
    );
  }
  return CHROMIUM;
}

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const DESKTOP = { width: 1440, height: 900 };
export const PHONE = { width: 390, height: 844 };

export interface SignedInPage {
  context: BrowserContext;
  page: Page;
  /** Page errors, console errors (but 401/403 answers) and requests outside `base`, each named by `name`. */
  problems: string[];
}

/** A fresh browser profile in `profileDir` at `viewport`, on `base` + `hash`, signed in with `token` and live. */
export async function openSignedIn(
  base: string,
  token: string,
  { profileDir, viewport, name, hash = '' }: { profileDir: string; viewport: { width: number; height: number }; name: string; hash?: string },
): Promise<SignedInPage> {
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: findChromium(),
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
    timeout: 30_000,
  });
  const problems: string[] = [];
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15_000);
  page.on('pageerror', (err) => problems.push(`${name}: page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !/status of 40[13]/.test(msg.text())) problems.push(`${name}: console error: ${msg.text()}`);
  });
  page.on('request', (req) => {
    if (!req.url().startsWith(base) && !/^(blob|data):/.test(req.url())) problems.push(`${name}: outside request ${req.url()}`);
  });
  await page.goto(`${base}/${hash}`);
  await page.fill('#token', token);
  await page.click('#login-form button[type=submit]');
  await page.locator('#live', { hasText: 'live' }).waitFor();
  return { context, page, problems };
}

/** The words and controls (buttons, inputs, selects) inside `card` that run past its left or right edge: none on a readable card. */
export async function pastTheEdge(card: Locator): Promise<string[]> {
  return card.evaluate((el) => {
    const box = el.getBoundingClientRect();
    // No named helper inside: the test runner's transpiler would wrap it in a function the page does not have.
    const past: string[] = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(n);
      const r = range.getBoundingClientRect();
      if (r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1)) past.push(n.textContent ?? '');
    }
    for (const c of el.querySelectorAll('button, input, select, textarea')) {
      const r = c.getBoundingClientRect();
      if (r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1))
        past.push(`<${c.tagName.toLowerCase()}> ${c.getAttribute('aria-label') ?? c.textContent ?? ''}`);
    }
    return past;
  });
}

/**
 * Opens one of the page's views from its tab, as a person does, and waits until the page has drawn it afresh. The
 * click only changes the address: the page routes on the hashchange that follows, so a test that typed or clicked
 * at once could reach the view's previous drawing (or the view it left), which is then drawn away. The tab marked
 * current says the route ran; the Areas view, which loads before it draws, is busy until drawn.
 */
export async function showView(page: Page, view: string): Promise<void> {
  await page.click(`nav.tabs a[data-view="${view}"]`);
  await page.locator(`nav.tabs a[data-view="${view}"][aria-current="page"]`).waitFor();
  await page.locator(`#view-${view}`).waitFor();
  if (view === 'areas') await page.locator('#areas-body:not([aria-busy])').waitFor();
}
