// Watches device files and folders and says when they changed, once per
// burst: an editor's save is several events (write, rename, chmod). A folder
// is watched for its *.yaml / *.yml files; a single file is watched through
// its folder, because editors save by renaming a new file over the old one,
// which would end a watch on the old file itself.
import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname, extname, resolve } from 'node:path';
import type { Logger } from '../log.js';
import { errorOf } from '../util/error.js';

const YAML = new Set(['.yaml', '.yml']);

export class DeviceFileWatcher {
  private readonly watchers: FSWatcher[] = [];
  private timer?: NodeJS.Timeout;

  constructor(
    paths: string[],
    private readonly onChange: () => void,
    private readonly log: Logger,
    private readonly debounceMs = 250,
  ) {
    // Folder -> the names in it that matter ('all': every YAML file).
    const folders = new Map<string, Set<string> | 'all'>();
    for (const path of paths.map((p) => resolve(p))) {
      let isFolder = false;
      try {
        isFolder = statSync(path).isDirectory();
      } catch {
        // Not there yet: watch its folder for it to appear.
      }
      const folder = isFolder ? path : dirname(path);
      const before = folders.get(folder);
      if (isFolder || before === 'all') folders.set(folder, 'all');
      else folders.set(folder, new Set([...(before ?? []), basename(path)]));
    }
    for (const [folder, names] of folders) {
      try {
        const w = watch(folder, (_event, name) => {
          const file = name?.toString();
          // No name: the platform did not say which file; reload to be safe.
          if (!file || (names === 'all' ? YAML.has(extname(file)) : names.has(file))) this.schedule();
        });
        w.on('error', (err) => this.log.warn({ err, folder }, 'stopped watching device files here; restart Hearth after editing them'));
        this.watchers.push(w);
      } catch (err) {
        this.log.warn({ err: errorOf(err), folder }, 'cannot watch device files here; restart Hearth after editing them');
      }
    }
  }

  /** How many folders are watched. */
  get folders(): number {
    return this.watchers.length;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.onChange(), this.debounceMs);
    this.timer.unref();
  }

  close(): void {
    clearTimeout(this.timer);
    for (const w of this.watchers.splice(0)) w.close();
  }
}
