// The kernel's log as the tests see it: the records of /dev/kmsg (the host's, or the guest kernel's
// under UML or the VM), read without blocking, with their sequence numbers, so a run can ask what the
// kernel said since a mark. The guard (kernel-log-guard.ts) uses it to fail a suite whose requests
// made the kernel complain about vpcnet's netlink helper.
import { closeSync, constants, openSync, readSync } from 'node:fs';

export interface KernelLogRecord {
  /** The kernel's sequence number: records are numbered without gaps while the buffer keeps them. */
  readonly seq: number;
  readonly message: string;
}

/**
 * Parses one /dev/kmsg record: `prio,seq,usec,flags[,…];message` then continuation lines (` KEY=v`)
 * that are dropped. Undefined for anything else.
 */
export function parseKmsgRecord(raw: string): KernelLogRecord | undefined {
  const semi = raw.indexOf(';');
  if (semi < 0) return undefined;
  const fields = raw.slice(0, semi).split(',');
  const seq = Number(fields[1]);
  if (fields.length < 3 || !Number.isSafeInteger(seq)) return undefined;
  const message = raw.slice(semi + 1).split('\n')[0] ?? '';
  return { seq, message };
}

/** Every record the kernel still holds, oldest first. Throws when /dev/kmsg cannot be read. */
export function readKernelLog(path = '/dev/kmsg'): KernelLogRecord[] {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const out: KernelLogRecord[] = [];
  // One read returns one record; a record is at most ~8 KiB (the kernel's own bound, 1 KiB + dict).
  const buf = Buffer.alloc(16_384);
  try {
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') break;
        // EPIPE: the oldest records were overwritten while we read; the next read goes on.
        if (code === 'EPIPE') continue;
        throw err;
      }
      if (n === 0) break;
      const rec = parseKmsgRecord(buf.toString('utf8', 0, n));
      if (rec) out.push(rec);
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/** The sequence number of the newest record (−1 for an empty log): a mark to read from later. */
export function kernelLogMark(path?: string): number {
  const all = readKernelLog(path);
  return all.at(-1)?.seq ?? -1;
}

/** Records after `mark` whose message matches `pattern`. */
export function kernelLogSince(mark: number, pattern: RegExp, path?: string): KernelLogRecord[] {
  return readKernelLog(path).filter((r) => r.seq > mark && pattern.test(r.message));
}
