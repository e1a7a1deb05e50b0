// How many DELs wait in the spool (for Prometheus' scrape and the CLI), read from the directory: the
// plugin writes entries while the agent runs (a refused connection), so only the directory knows.
import { readdir } from 'node:fs/promises';
import { FAILED_SUFFIX, REJECTED_SUFFIX } from './format.ts';
import { spoolEntryNames } from './read.ts';

export interface SpoolDepth {
  /** Entries the next drain applies. */
  readonly pending: number;
  /** Set aside as `.failed` (can never apply). */
  readonly failed: number;
  /** Set aside as `.rejected` (not something the plugin writes). */
  readonly rejected: number;
}

export async function spoolDepth(dir: string): Promise<SpoolDepth> {
  const pending = spoolEntryNames(dir).length;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    names = []; // spoolEntryNames already threw for anything but a missing dir
  }
  return {
    pending,
    failed: names.filter((n) => n.endsWith(FAILED_SUFFIX)).length,
    rejected: names.filter((n) => n.endsWith(REJECTED_SUFFIX)).length,
  };
}

/** How many DELs wait (what the CLI shows): undefined when the directory cannot be read. */
export async function pendingSpooled(dir: string): Promise<number | undefined> {
  try {
    return (await spoolDepth(dir)).pending;
  } catch {
    return undefined;
  }
}
