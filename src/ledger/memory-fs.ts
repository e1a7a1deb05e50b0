// An in-memory LedgerFsDeps for tests, with failure injection at each step of an atomic save.

import type { LedgerFsDeps } from './store.ts';

export type LedgerFsStep = 'write' | 'fsync' | 'rename' | 'syncDir';

export class MemoryLedgerFs implements LedgerFsDeps {
  readonly files = new Map<string, string>();
  readonly calls: string[] = [];
  /** Steps that fail once each, in order of arrival; a test pushes the steps it wants to break. */
  readonly failNext: LedgerFsStep[] = [];

  #maybeFail(step: LedgerFsStep, path: string): void {
    const i = this.failNext.indexOf(step);
    if (i >= 0) {
      this.failNext.splice(i, 1);
      throw Object.assign(new Error(`injected ${step} failure on ${path}`), { code: 'EIO' });
    }
  }

  async readFile(path: string): Promise<string | undefined> {
    this.calls.push(`read ${path}`);
    return this.files.get(path);
  }

  async writeFileSynced(path: string, data: string): Promise<void> {
    this.calls.push(`write ${path}`);
    this.#maybeFail('write', path);
    this.files.set(path, data);
    // An fsync failure leaves the content undefined on disk; model the worst case: torn.
    try {
      this.#maybeFail('fsync', path);
    } catch (err) {
      this.files.set(path, data.slice(0, Math.floor(data.length / 2)));
      throw err;
    }
  }

  async rename(from: string, to: string): Promise<void> {
    this.calls.push(`rename ${from} ${to}`);
    this.#maybeFail('rename', from);
    const data = this.files.get(from);
    if (data === undefined) throw Object.assign(new Error(`ENOENT: ${from}`), { code: 'ENOENT' });
    this.files.set(to, data);
    this.files.delete(from);
  }

  async syncDir(dir: string): Promise<void> {
    this.calls.push(`syncDir ${dir}`);
    this.#maybeFail('syncDir', dir);
  }

  async removeFile(path: string): Promise<void> {
    this.calls.push(`remove ${path}`);
    this.files.delete(path);
  }
}
