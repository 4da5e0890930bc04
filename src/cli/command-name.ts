// How a person runs `hearth` from where they are, so that a command Hearth prints runs as printed: after `npm ci`
// the `hearth` bin is not on PATH (it is after `npm link` or a global install), and `npx` costs a second a command.
import { existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout (or installed package) this command runs from: src/cli/ and dist/cli/ are two levels down. */
export const PACKAGE_ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/**
 * `hearth` when it is on PATH, `npm run hearth --` in the checkout, else node and the script's path.
 */
export function hearthCommand(cwd = process.cwd(), path = process.env.PATH ?? ''): string {
  const onPath = path.split(delimiter).some((dir) => dir && existsSync(join(dir, process.platform === 'win32' ? 'hearth.cmd' : 'hearth')));
  if (onPath) return 'hearth';
  if (resolve(cwd) === resolve(PACKAGE_ROOT)) return 'npm run hearth --';
  return `node ${join(PACKAGE_ROOT, 'dist', 'cli', 'main.js')}`;
}
