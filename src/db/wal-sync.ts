// Group commit for a WAL database, off the main thread.
//
// With PRAGMA synchronous=NORMAL a commit returns once its frames are written
// to the -wal file: a crash of the process loses nothing (the OS has the
// bytes), but a power cut can lose the newest commits. A synchronous=FULL
// commit closes that gap by waiting for an fsync on the main thread, ~0.2-0.5 ms
// on an SSD, during which nothing else runs. WalSync does that fsync on the
// libuv thread pool instead: sync() resolves when every commit made before the
// call is on disk, and every sync() asked for while an fsync runs shares the
// next one. The caller keeps working (publishing the command it just
// recorded) while the disk catches up.
import { open, type FileHandle } from 'node:fs/promises';
import { fdatasyncSync, openSync, closeSync } from 'node:fs';

export interface WalSyncOptions {
  /** The fsync itself (default: fdatasync of the handle). Tests wrap it to count or fail flushes. */
  datasync?: (handle: FileHandle) => Promise<void>;
  /** The fsync on this thread (default: fdatasync of the descriptor). Tests wrap it to count, fail or hold it. */
  datasyncNow?: (fd: number) => void;
}

export class WalSync {
  /** The fsync running now, if any. */
  private running?: Promise<void>;
  /** The next one, shared by every sync() asked for while `running` runs. */
  private queued?: Promise<void>;
  private handle?: FileHandle;
  private fd?: number;
  private closed = false;
  /** fsyncs done (for tests and stats). */
  flushes = 0;

  constructor(
    /** The database file; its write-ahead log is `${path}-wal`. */
    readonly dbPath: string,
    private readonly options: WalSyncOptions = {},
  ) {}

  get walPath(): string {
    return `${this.dbPath}-wal`;
  }

  /** Resolves when every commit made before this call is on disk; rejects with the fsync's error. */
  sync(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`WAL sync of ${this.dbPath} is closed`));
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    // The running fsync may have started before this caller's commit: it needs the next one.
    const queued = this.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        this.queued = undefined;
        return this.start();
      });
    this.queued = queued;
    return queued;
  }

  /** The fsync now, on the main thread (shutdown, and each synchronous write of a `full` audit). */
  syncNow(): void {
    // A descriptor kept open: an open() and close() per commit would cost as much as the commit.
    this.fd ??= openSync(this.walPath, 'r');
    if (this.options.datasyncNow) this.options.datasyncNow(this.fd);
    else fdatasyncSync(this.fd);
    this.flushes++;
  }

  /** Wait for the fsyncs asked for so far, then release the file. */
  async close(): Promise<void> {
    const pending = this.queued ?? this.running;
    this.closed = true;
    await pending?.catch(() => undefined);
    const h = this.handle;
    this.handle = undefined;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    await h?.close().catch(() => undefined);
  }

  private start(): Promise<void> {
    const p = this.flush().finally(() => {
      if (this.running === p) this.running = undefined;
    });
    this.running = p;
    return p;
  }

  private async flush(): Promise<void> {
    // The -wal file keeps its inode while any connection is open (SQLite resets it by
    // overwriting from the start, and deletes it only when the last connection closes).
    this.handle ??= await open(this.walPath, 'r');
    await (this.options.datasync ? this.options.datasync(this.handle) : this.handle.datasync());
    this.flushes++;
  }
}
