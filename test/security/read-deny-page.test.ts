/// <reference lib="dom" />
// Issue 15, finding 6, the page: a guest denied `read` on front_door.* signs
// in to the web page (headless Chromium, playwright-core) and never sees the
// front door, neither in the first device list nor from the live event
// stream, while the lamp's change arrives live. Real broker (aedes), real
// SQLite, the real HTTP server serving the page.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { useHttpHome, OWNER_AND_GUEST } from '../helpers/http-home.js';
import { DESKTOP, openSignedIn, showView } from '../helpers/page-browser.js';
import { GUESTS_DO_NOT_SEE_FRONT_DOOR } from './helpers.js';

describe('security: the web page shows a guest only what it may read', () => {
  const home = useHttpHome({ tokens: { guest: OWNER_AND_GUEST.guest } });
  let page: Page;
  let problems: string[];
  const profile = mkdtempSync(join(tmpdir(), 'hearth-page-guest-'));

  before(async () => {
    home.hearth.policy.add(GUESTS_DO_NOT_SEE_FRONT_DOOR);
    const signedIn = await openSignedIn(home.server.url, home.secret('guest'), { profileDir: profile, viewport: DESKTOP, name: 'guest' });
    home.cleanup(() => signedIn.context.close().catch(() => undefined));
    ({ page, problems } = signedIn);
  });
  after(() => rmSync(profile, { recursive: true, force: true }));

  it('lists no front door entity, before or after the lock reports, while the lamp updates live', async () => {
    await page.locator('#app').waitFor({ state: 'visible' });
    await showView(page, 'devices');
    const lamp = page.locator('[data-entity="living_room_lamp.lamp"] .value');
    await lamp.waitFor();
    const visible = home.hearth.visibleEntities({ id: 'http:guest', roles: ['guest'] }).length;
    assert.equal(await page.locator('.entity').count(), visible);
    assert.equal(await page.locator('[data-entity^="front_door"]').count(), 0);

    // The lock reports, then the lamp: once the page shows the lamp's change, it would have had the lock's.
    const before = (await lamp.textContent())?.trim();
    const next = before === 'on' ? 'off' : 'on';
    await home.device.publishAsync('hearth-demo/front_door/lock', 'unlocked');
    await home.device.publishAsync('hearth-demo/living_room_lamp/state', next.toUpperCase());
    await page.locator('[data-entity="living_room_lamp.lamp"] .value', { hasText: next }).waitFor();
    assert.equal(await page.locator('[data-entity^="front_door"]').count(), 0);
    assert.equal(await page.locator('.entity').count(), visible);
    assert.doesNotMatch((await page.textContent('#view-devices')) ?? '', /Front door/);
    assert.deepEqual(problems, []);
  });
});
