// Writing the DEL spool (format.ts): while the agent is down a DEL is written here and reported as
// done; the agent applies the spooled DELs, in arrival order. The TypeScript forwarder's writer, and
// the specification the C plugin's (src/plugin/native/spool.c) is held to.
// Durable before success (docs/design.md, rule 3): the file and its directory entry are fsynced
// before the plugin exits 0, so a DEL the runtime saw succeed survives a node crash.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ForwardedRequest } from '../cni/wire.ts';
import { SPOOL_TEMP_PREFIX, spoolFileName } from './format.ts';

export type DelSpooler = (dir: string, request: ForwardedRequest) => string;

/** Writes `request` into `dir` (created if missing) and returns the file's path. Throws on any failure. */
export function spoolDel(dir: string, request: ForwardedRequest): string {
  const tag = Math.floor(Math.random() * 0x1_0000_0000)
    .toString(16)
    .padStart(8, '0');
  const name = spoolFileName(Date.now(), process.hrtime.bigint(), process.pid, tag);
  const finalPath = join(dir, name);
  // The temp name starts with SPOOL_TEMP_PREFIX so a draining agent skips half-written files.
  const tempPath = join(dir, `${SPOOL_TEMP_PREFIX}${name}`);

  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fd = openSync(tempPath, 'wx', 0o600);
  try {
    const data = Buffer.from(JSON.stringify(request), 'utf8');
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkQuietly(tempPath);
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tempPath, finalPath);
  } catch (err) {
    unlinkQuietly(tempPath);
    throw err;
  }
  // The rename is durable only once the directory itself is fsynced.
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  return finalPath;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone, or the directory is unwritable; the original error is the one to report.
  }
}
