// The sentence data in use: the shipped language folder plus a user's folder,
// compiled once, and compiled again when a file in the user's folder changes.
// Problems (file, line, reason) are kept and logged; the sentences that were
// fine keep working.
import { watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { loadLanguage, SHIPPED_SENTENCES, type Problem } from './language.js';
import { CompiledLanguage } from './matcher.js';

export interface SentenceSetOptions {
  /** The language folder under sentences/ (default "en"). */
  language?: string;
  /** A user's folder of sentence files: added to (and overriding lists of) the shipped ones. */
  userDir?: string;
  /** Recompile when a file in the user's folder changes. */
  watch?: boolean;
  log?: Logger;
  /** Where the shipped languages are (tests). */
  shippedDir?: string;
}

const shippedCache = new Map<string, SentenceSet>();

export class SentenceSet {
  private compiled: CompiledLanguage;
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private readonly listeners = new Set<(problems: Problem[]) => void>();

  constructor(private readonly options: SentenceSetOptions = {}) {
    this.compiled = this.compile();
    if (options.watch && options.userDir) this.startWatching(options.userDir);
  }

  /** The shipped sentences of a language, compiled once per process. */
  static shipped(language = 'en'): SentenceSet {
    let set = shippedCache.get(language);
    if (!set) shippedCache.set(language, (set = new SentenceSet({ language })));
    return set;
  }

  private dirs(): string[] {
    const lang = this.options.language ?? 'en';
    const dirs = [join(this.options.shippedDir ?? SHIPPED_SENTENCES, lang)];
    if (this.options.userDir) dirs.push(this.options.userDir);
    return dirs;
  }

  private compile(): CompiledLanguage {
    const compiled = new CompiledLanguage(loadLanguage(this.dirs()));
    for (const p of compiled.problems)
      this.options.log?.warn({ file: p.file, line: p.line, reason: p.reason }, `sentence file problem: ${p.file}:${p.line}: ${p.reason}`);
    this.options.log?.info({ sentences: compiled.templates.length, problems: compiled.problems.length }, 'sentences compiled');
    return compiled;
  }

  current(): CompiledLanguage {
    return this.compiled;
  }

  get problems(): Problem[] {
    return this.compiled.problems;
  }

  /** Compile again now (the watcher does this after a change). */
  reload(): void {
    this.compiled = this.compile();
    for (const l of this.listeners) l(this.compiled.problems);
  }

  /** Called after every reload with its problems. */
  onReload(listener: (problems: Problem[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private startWatching(dir: string): void {
    try {
      this.watcher = watch(dir, () => {
        // Editors write in bursts: one reload after the burst.
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.reload(), 100);
        this.timer.unref?.();
      });
      this.watcher.on('error', (err) => this.options.log?.warn({ err }, 'sentence folder watch failed'));
      this.watcher.unref?.();
    } catch (err) {
      this.options.log?.warn({ err }, 'cannot watch the sentence folder');
    }
  }

  close(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
  }
}
