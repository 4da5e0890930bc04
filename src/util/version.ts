// Hearth's own version (package.json), for the doors that tell clients what
// answers them (MCP serverInfo, Wyoming info, the OpenAI system_fingerprint).
import { readFileSync } from 'node:fs';

let version: string | undefined;

export function hearthVersion(): string {
  if (version) return version;
  try {
    // src/util and dist/util are both two folders below the package root.
    version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    version = '0.0.0';
  }
  return version;
}
