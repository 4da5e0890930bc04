// The flow library's scorecard, run for real: `node-red-dev validate` (the tool the Node-RED flow library
// scores packages with) on this package as `npm pack` publishes it. What the tool fetches is answered on the
// wire by a local stand-in: it asks https://catalogue.nodered.org/catalogue.json and the npm registry's
// `node-red` over an HTTP proxy (its axios honours https_proxy), and the registry for each dependency at
// npm's configured registry (npm_registry); the stand-in answers from test/fixtures/node-red-dev and from
// package-lock.json (the dependency tree this package installs), and refuses anything else.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '../helpers/cli.js';
import { npmPackUnpacked } from '../helpers/npm-install.js';
import { spawnInGroup } from '../helpers/processes.js';

const require = createRequire(import.meta.url);
const semver = require('semver') as { satisfies(version: string, range: string): boolean };
const FIXTURES = join(ROOT, 'test', 'fixtures', 'node-red-dev');
const VALIDATE = join(ROOT, 'node_modules', 'node-red-dev', 'bin', 'run');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; 'node-red': { version: string; nodes: Record<string, string> } };

interface Scorecard {
  [check: string]: { test: boolean; nodes?: string[]; versions?: string[]; packages?: string[] } | { name: string; version: string };
}

/** What the registry would answer for a package: every version of it the lockfile installs, with its dependencies. */
function packuments(): Map<string, { name: string; 'dist-tags': { latest: string }; versions: Record<string, unknown> }> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { name?: string; version?: string; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }>;
  };
  const out = new Map<string, { name: string; 'dist-tags': { latest: string }; versions: Record<string, unknown> }>();
  for (const [path, entry] of Object.entries(lock.packages)) {
    const at = path.lastIndexOf('node_modules/');
    if (at < 0 || !entry.version) continue;
    const name = entry.name ?? path.slice(at + 'node_modules/'.length);
    const doc = out.get(name) ?? { name, 'dist-tags': { latest: entry.version }, versions: {} };
    doc.versions[entry.version] = {
      name,
      version: entry.version,
      dependencies: entry.dependencies ?? {},
      optionalDependencies: entry.optionalDependencies ?? {},
    };
    if (semver.satisfies(entry.version, `>${doc['dist-tags'].latest}`)) doc['dist-tags'].latest = entry.version;
    out.set(name, doc);
  }
  return out;
}

describe("the flow library's scorecard (node-red-dev validate) on the package as npm pack publishes it", () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-scorecard-'));
  const seen: string[] = [];
  let stand: Server | undefined;
  let scorecard: Scorecard = {};
  let printed = '';

  before(async () => {
    const packed = npmPackUnpacked(ROOT, dir);
    const registry = packuments();
    const json = (res: import('node:http').ServerResponse, body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    stand = createServer((req, res) => {
      const url = req.url ?? '';
      seen.push(`${req.method} ${url}`);
      if (req.method === 'GET' && url === 'https://catalogue.nodered.org/catalogue.json')
        return json(res, JSON.parse(readFileSync(join(FIXTURES, 'catalogue.json'), 'utf8')));
      if (req.method === 'GET' && url === 'https://registry.npmjs.org/node-red')
        return json(res, JSON.parse(readFileSync(join(FIXTURES, 'registry-node-red.json'), 'utf8')));
      const doc = req.method === 'GET' && url.startsWith('/') ? registry.get(decodeURIComponent(url.slice(1))) : undefined;
      if (doc) return json(res, doc);
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":"not found"}');
    });
    // A tunnel (CONNECT) would reach the real internet: refused, and seen.
    stand.on('connect', (req, socket) => {
      seen.push(`CONNECT ${req.url}`);
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    });
    await new Promise<void>((ok) => stand!.listen(0, '127.0.0.1', ok));
    const here = `http://127.0.0.1:${(stand.address() as AddressInfo).port}`;
    const home = join(dir, 'home');
    mkdirSync(home);
    const out = join(dir, 'scorecard.json');
    const child = spawnInGroup(process.execPath, [VALIDATE, 'validate', '-p', packed, '-o', out], {
      cwd: dir,
      // Only what the tool needs: no npmrc of the developer's (HOME), every lookup to the stand-in.
      env: { PATH: process.env.PATH, HOME: home, https_proxy: here, HTTPS_PROXY: here, npm_registry: `${here}/`, no_proxy: '', NO_PROXY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (printed += d));
    child.stderr!.on('data', (d) => (printed += d));
    const code = await new Promise<number | null>((ok) => child.once('exit', ok));
    assert.equal(code, 0, printed);
    scorecard = JSON.parse(readFileSync(out, 'utf8')) as Scorecard;
  });

  after(async () => {
    await new Promise<void>((ok) => (stand ? stand.close(() => ok()) : ok()));
    rmSync(dir, { recursive: true, force: true });
  });

  const check = (id: string) => scorecard[id] as { test: boolean; nodes?: string[]; versions?: string[]; packages?: string[] };

  it("parses every node's .html: each registers its type in its own file, and none takes a type another catalogue module has", () => {
    assert.doesNotMatch(printed, /Unable to parse/, printed);
    assert.equal(check('N01').test, true, `N01 unique node types: ${printed}`);
    // N02 lists the node types it found in the examples: every type the package's files define but the config node.
    assert.equal(check('N02').test, true, `N02 examples for every node: ${printed}`);
    assert.deepEqual(check('N02').nodes?.slice().sort(), [
      'hearth-approval',
      'hearth-audit',
      'hearth-current-state',
      'hearth-device',
      'hearth-session',
      'hearth-state',
      'hearth-tool',
      'hearth-tool-result',
    ]);
  });

  it('reads the package as published: licence, scoped name, node-red keyword, Node.js version', () => {
    assert.deepEqual(scorecard.package, { name: pkg.name, version: (scorecard.package as { version: string }).version });
    for (const id of ['P01', 'P04', 'P05', 'P07', 'P08']) assert.equal(check(id).test, true, `${id}: ${printed}`);
  });

  it('reads the Node-RED versions as supported and tested: the 4.1 line the tests run, not Node-RED 5', () => {
    const tested = (require('node-red/package.json') as { version: string }).version;
    assert.ok(semver.satisfies(tested, pkg['node-red'].version), `the Node-RED the tests run (${tested}) is in ${pkg['node-red'].version}`);
    assert.ok(!semver.satisfies('5.0.7', pkg['node-red'].version));
    assert.equal(check('P06').test, false);
    assert.equal(check('P06').versions, undefined);
    assert.match(printed, /P06 NOT Compatible with Node-RED v5\.0\.7/);
  });

  it('finds no package known to break Node-RED in the dependency tree', () => {
    assert.equal(check('D02').test, true, `D02: ${printed}`);
  });

  it('every lookup was answered by the local stand-in: the catalogue, the registry, nothing tunnelled out', () => {
    assert.ok(seen.filter((s) => s === 'GET https://catalogue.nodered.org/catalogue.json').length >= 2, seen.join('\n'));
    assert.ok(seen.includes('GET https://registry.npmjs.org/node-red'), seen.join('\n'));
    assert.deepEqual(
      seen.filter((s) => !/^GET (https:\/\/catalogue\.nodered\.org\/catalogue\.json|https:\/\/registry\.npmjs\.org\/node-red|\/\S+)$/.test(s)),
      [],
      'no other request, no tunnel',
    );
  });
});
