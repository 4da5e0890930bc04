// The package as Node-RED's packaging guide and flow-library scorecard read it:
// one npm package gives both the `hearth` CLI and the palette's nodes.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from '../helpers/cli.js';

interface Manifest {
  name: string;
  license?: string;
  keywords?: string[];
  engines?: { node?: string };
  bin?: Record<string, string>;
  files?: string[];
  publishConfig?: { access?: string };
  dependencies?: Record<string, string>;
  'node-red'?: { version?: string; nodes?: Record<string, string> };
}

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;

describe('the npm package', () => {
  it('has a scoped name published public, as the Node-RED packaging guide asks of packages first published after January 2022', () => {
    assert.match(pkg.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
    assert.equal(pkg.publishConfig?.access, 'public', 'a scoped package is private on npm unless published public');
  });

  it('carries what the flow library scorecard checks: node-red keyword, Node-RED and Node versions, licence file, examples', () => {
    assert.ok(pkg.keywords?.includes('node-red'), 'the node-red keyword makes the flow library list it');
    assert.equal(pkg['node-red']?.version, '4.1.x', 'the Node-RED line the tests run (test/nodes/scorecard.test.ts reads it as the scorecard does)');
    assert.match(pkg.engines?.node ?? '', /^>=20\.19/);
    assert.equal(pkg.license, 'MIT');
    assert.ok(existsSync(join(ROOT, 'LICENSE')));
    assert.ok(pkg.files?.includes('LICENSE') && pkg.files.includes('examples'), 'LICENSE and examples/ are in the tarball');
    assert.equal(pkg.dependencies?.['node-red'], undefined, 'installing the nodes must not pull a second Node-RED');
    for (const [type, file] of Object.entries(pkg['node-red']?.nodes ?? {})) {
      assert.ok(existsSync(join(ROOT, file.replace(/\.js$/, '.ts'))), `${type}: ${file} has its source`);
      assert.ok(existsSync(join(ROOT, file.replace(/\.js$/, '.html'))), `${type}: ${file} has its editor file`);
    }
  });

  it('gives the hearth command from the same package', () => {
    assert.equal(pkg.bin?.hearth, 'dist/cli/main.js');
    assert.ok(pkg.files?.includes('dist'));
  });
});
