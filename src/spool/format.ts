// The DEL spool's on-disk protocol, shared by the plugin that writes it (the C forwarder in
// src/plugin/native/spool.c, and its TypeScript specification, write.ts) and by what reads it: the
// agent's replay (src/agent/spool-replay/), its metrics and the CLI (depth.ts, read.ts).
//
// While the agent is down the plugin writes each DEL as one file in the spool dir (`delSpoolDir`
// from the netconf, else DEFAULT_DEL_SPOOL_DIR). A file's content is a ForwardedRequest as JSON.
// Names sort in arrival order, so the agent drains them by listing the directory, keeping names
// that end in SPOOL_FILE_SUFFIX, sorting them, and deleting each file after the DEL it holds was
// applied. Files starting with SPOOL_TEMP_PREFIX are half-written and never read. An entry that can
// never apply is renamed with FAILED_SUFFIX, one that is not something the plugin writes with
// REJECTED_SUFFIX: kept for an operator, never read again.
import type { ForwardedRequest } from '../cni/wire.ts';

export const DEFAULT_DEL_SPOOL_DIR = '/var/lib/vpcnet/del-spool';
export const SPOOL_FILE_SUFFIX = '.del.json';
export const SPOOL_TEMP_PREFIX = '.tmp-';
export const FAILED_SUFFIX = '.failed';
export const REJECTED_SUFFIX = '.rejected';

/**
 * Names sort lexicographically in arrival order: wall-clock ms (order across reboots), then
 * the monotonic ns clock (order within one ms, shared by all processes on the host), then
 * pid and a random tag so that two plugins can never pick the same name.
 */
export function spoolFileName(wallMs: number, monotonicNs: bigint, pid: number, tag: string): string {
  return `${String(wallMs).padStart(15, '0')}-${String(monotonicNs).padStart(20, '0')}-${pid}-${tag}${SPOOL_FILE_SUFFIX}`;
}

/** A spooled file's request, or undefined when its content is not one. */
export function parseSpooled(text: string): ForwardedRequest | undefined {
  try {
    const v = JSON.parse(text) as { env?: unknown; stdin?: unknown };
    if (typeof v.stdin !== 'string' || typeof v.env !== 'object' || v.env === null) return undefined;
    const env: Record<string, string> = {};
    for (const [k, val] of Object.entries(v.env)) if (typeof val === 'string') env[k] = val;
    return { env, stdin: v.stdin };
  } catch {
    return undefined;
  }
}
