// The ledger's file operations, and their implementation on the real filesystem, built over an
// injectable slice of node:fs/promises so a test can watch the system calls (that every save really fsyncs).
import * as fsp from 'node:fs/promises';

/**
 * The file operations the file store needs, one system call's worth each, so that tests can model
 * which of them reached the disk when the machine stops (testing/memory-fs.ts).
 */
export interface LedgerFsDeps {
  /** File contents, or undefined when the file does not exist. */
  readFile(path: string): Promise<string | undefined>;
  /** Creates or truncates `path` (mode 0600) and writes `data`; nothing is durable yet. */
  writeFile(path: string, data: string): Promise<void>;
  /** fsyncs a file's contents. */
  syncFile(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** fsyncs a directory so that a rename inside it is durable. */
  syncDir(dir: string): Promise<void>;
  /** Removes a file; a missing file is not an error. */
  removeFile(path: string): Promise<void>;
}

/** The part of node:fs/promises the ledger uses. */
export interface FsPromises {
  open(path: string, flags: string, mode?: number): Promise<FileHandleLike>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  rename(from: string, to: string): Promise<void>;
  rm(path: string, options: { force: boolean }): Promise<void>;
}

export interface FileHandleLike {
  writeFile(data: string, encoding: 'utf8'): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

function isMissing(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

async function withHandle(
  fs: FsPromises,
  path: string,
  flags: string,
  use: (h: FileHandleLike) => Promise<void>,
  mode?: number,
): Promise<void> {
  const handle = await fs.open(path, flags, mode);
  try {
    await use(handle);
  } finally {
    await handle.close();
  }
}

export function ledgerFsOn(fs: FsPromises): LedgerFsDeps {
  return {
    async readFile(path) {
      try {
        return await fs.readFile(path, 'utf8');
      } catch (err) {
        if (isMissing(err)) return undefined;
        throw err;
      }
    },
    writeFile: (path, data) => withHandle(fs, path, 'w', (h) => h.writeFile(data, 'utf8'), 0o600),
    syncFile: (path) => withHandle(fs, path, 'r+', (h) => h.sync()),
    rename: (from, to) => fs.rename(from, to),
    syncDir: (dir) => withHandle(fs, dir, 'r', (h) => h.sync()),
    removeFile: (path) => fs.rm(path, { force: true }),
  };
}

export const nodeLedgerFs: LedgerFsDeps = ledgerFsOn(fsp as unknown as FsPromises);
