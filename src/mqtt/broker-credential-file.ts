// Hearth's credential for its own embedded broker, beside the database (`hearth.db.broker`, mode 0600): the
// daemon that runs the broker writes it, and another Hearth process on the same database (a command, `hearth
// mcp`) reads it to publish commands as Hearth does. A process on another database has no credential: the
// broker lets it read, never command.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { checkPrivate, makePrivate } from '../util/private-file.js';
import type { BrokerCredential } from './broker-access.js';

export function credentialFileFor(dbPath: string): string | undefined {
  return dbPath === ':memory:' ? undefined : `${dbPath}.broker`;
}

/** The credential and the broker it is for (the embedded broker's URL). */
export interface StoredCredential extends BrokerCredential {
  url: string;
}

export function writeCredential(file: string, credential: BrokerCredential, url: string): void {
  // The mode applies when the file is made: one an older Hearth left readable by others is made private first.
  makePrivate(file);
  writeFileSync(file, `${JSON.stringify({ ...credential, url, pid: process.pid })}\n`, { mode: 0o600 });
}

/** Whether two broker URLs name the same loopback broker (localhost and 127.0.0.1 are one). */
export function sameBroker(a: string, b: string): boolean {
  try {
    const [x, y] = [new URL(a), new URL(b)];
    const host = (h: string) => (h === 'localhost' || h === '[::1]' ? '127.0.0.1' : h);
    return x.protocol === y.protocol && host(x.hostname) === host(y.hostname) && (x.port || '1883') === (y.port || '1883');
  } catch {
    return false;
  }
}

/** The credential in `file`, when there is one that is ours alone and well formed. */
export function readCredential(file: string): StoredCredential | undefined {
  try {
    if (!checkPrivate(file, 'file')) return undefined;
    const c = JSON.parse(readFileSync(file, 'utf8')) as Partial<StoredCredential>;
    return typeof c.username === 'string' && typeof c.password === 'string' && typeof c.url === 'string'
      ? { username: c.username, password: c.password, url: c.url }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Remove the file if it is still the one this process wrote. */
export function removeCredential(file: string, credential: BrokerCredential): void {
  try {
    const c = JSON.parse(readFileSync(file, 'utf8')) as Partial<BrokerCredential>;
    if (c.password === credential.password) rmSync(file, { force: true });
  } catch {
    // gone already
  }
}
