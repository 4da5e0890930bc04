// How a person runs `hearth` from where they are, so that a command Hearth prints runs as printed: after `npm ci`
// the `hearth` bin is not on PATH (it is after `npm link` or a global install), a package installed in a folder
// is run with `npx hearth` there, and `npx` elsewhere would fetch another copy from the registry.
import { existsSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout (or installed package) this command runs from: src/cli/ and dist/cli/ are two levels down. */
export const PACKAGE_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** Where a command runs from: its folder, its PATH, and the package that prints the hint. */
export interface CommandPlace {
  cwd?: string;
  path?: string;
  packageRoot?: string;
}

const BIN = process.platform === 'win32' ? 'hearth.cmd' : 'hearth';

const real = (p: string): string | undefined => {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
};

/** The folder whose node_modules holds the package (`<folder>/node_modules/@hearth-bridge/hearth`), if it is installed in one. */
function installFolder(packageRoot: string): string | undefined {
  const at = packageRoot.lastIndexOf(`${sep}node_modules${sep}`);
  return at < 0 ? undefined : packageRoot.slice(0, at) || sep;
}

/** The folder npm takes as the project for `npx` run in cwd: the nearest one up with a package.json or node_modules. */
function npmProject(cwd: string): string | undefined {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) || existsSync(join(dir, 'node_modules'))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The command that runs this Hearth from `cwd`: `hearth` when the `hearth` on PATH is this package's (after `npm
 * link` or a global install), `npm run hearth --` in the checkout, `npx hearth` in the folder it is installed in,
 * else node and the script's path.
 */
export function hearthCommand(cwd = process.cwd(), path = process.env.PATH ?? '', packageRoot = PACKAGE_ROOT): string {
  const main = real(join(packageRoot, 'dist', 'cli', 'main.js'));
  // The first `hearth` on PATH is the one a shell runs: only this package's will do (another checkout's is not this Hearth).
  const first = path
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, BIN))
    .find((bin) => existsSync(bin));
  if (first && main && real(first) === main) return 'hearth';
  if (resolve(cwd) === resolve(packageRoot)) return 'npm run hearth --';
  const folder = installFolder(packageRoot);
  if (folder && npmProject(cwd) === resolve(folder) && main && real(join(folder, 'node_modules', '.bin', BIN)) === main) return 'npx hearth';
  return `node ${join(packageRoot, 'dist', 'cli', 'main.js')}`;
}

/** A note under the banner's commands on how to get a plain `hearth`, or undefined when it is one already. */
export function plainCommandNote(cmd: string, packageRoot = PACKAGE_ROOT): string | undefined {
  if (cmd === 'hearth') return undefined;
  // Installed in a folder's node_modules: `npm link` there would link the folder's project, not Hearth.
  if (installFolder(packageRoot)) return 'a `hearth` command for any folder: `npm install -g @hearth-bridge/hearth`';
  return `a \`hearth\` command for any folder: run \`npm link\` once in ${packageRoot}`;
}
