// The plugin spools DELs it could not hand to the agent (docs/design.md, The plugin): the agent down, or
// not answering. The agent replays them in arrival order (file names sort by arrival) through
// the same handler as live requests: before it serves, and then periodically, because a DEL can
// be spooled while the agent runs (a refused or reset connection during a restart or rollout).
// A DEL that fails for a reason that may pass is kept and retried; one that can never apply
// (not a request, or refused as invalid) is kept renamed `.failed`, never dropped. What the plugin
// never writes (a FIFO, a link, a directory, an oversized file) is set aside unread as `.rejected`.
// No entry stops the others: each one's failure is counted and logged, and the drain goes on.
//
// Which DEL is stale is decided without clocks: an ADD applies the spooled DELs of its own key
// before it attaches (spool-first.ts), so any entry found here was spooled after the last ADD of
// its key and is a real DEL. The drain applies an entry only if it is still there once it holds
// the pod's line (SpoolGuard), and removes it in that line.
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CNI_ERR_DECODE,
  CNI_ERR_INCOMPATIBLE_VERSION,
  CNI_ERR_INVALID_ENV,
  CNI_ERR_INVALID_NETCONF,
  CNI_ERR_UNSUPPORTED_FIELD,
} from '../../cni/errors.ts';
import type { ForwardedRequest, ForwardedResponse } from '../../cni/wire.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { FAILED_SUFFIX, REJECTED_SUFFIX } from '../../spool/format.ts';
import { consumeEntry, readSpoolEntry, setAside, spoolEntryNames, syncDir } from '../../spool/read.ts';

/**
 * Run inside the pod's line by the handler: whether the entry is still spooled (an ADD of its key
 * may have applied it meanwhile), and its removal once its DEL succeeded.
 */
export interface SpoolGuard {
  stillSpooled(): Promise<boolean>;
  consume(): Promise<void>;
}

function guardOf(path: string): SpoolGuard {
  return {
    async stillSpooled() {
      try {
        await lstat(path);
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
    },
    consume: () => consumeEntry(path),
  };
}

const NEVER_APPLIES = new Set([
  CNI_ERR_INCOMPATIBLE_VERSION,
  CNI_ERR_UNSUPPORTED_FIELD,
  CNI_ERR_INVALID_ENV,
  CNI_ERR_DECODE,
  CNI_ERR_INVALID_NETCONF,
]);

function refusedForGood(res: ForwardedResponse): boolean {
  try {
    const code = (JSON.parse(res.stdout) as { code?: unknown }).code;
    return typeof code === 'number' && NEVER_APPLIES.has(code);
  } catch {
    return false;
  }
}

export interface DrainResult {
  readonly replayed: number;
  /** Kept for a later drain (the DEL failed for a reason that may pass). */
  readonly retrying: number;
  /** Kept as `.failed` (can never apply). */
  readonly failed: number;
  /** Set aside unread as `.rejected`: not a regular file of a sane size. */
  readonly rejected: number;
  /** Entries whose handling failed (read, handler or rename error); left where they are. */
  readonly errors: number;
}

export interface DrainDeps {
  /** Handles the DEL in its pod's line, asking `guard` there whether it is still to be applied. */
  readonly handle: (req: ForwardedRequest, guard: SpoolGuard) => Promise<ForwardedResponse>;
  readonly log: Logger;
}

type Outcome = Exclude<keyof DrainResult, 'errors'> | 'gone';

async function drainEntry(dir: string, name: string, deps: DrainDeps): Promise<Outcome> {
  const path = join(dir, name);
  const entry = await readSpoolEntry(path);
  if (entry.kind === 'gone') return 'gone';
  if (entry.kind === 'odd') {
    await setAside(path, REJECTED_SUFFIX);
    deps.log.error(`spool entry is ${entry.why}, not a spooled DEL; set aside unread`, {
      file: `${name}${REJECTED_SUFFIX}`,
    });
    return 'rejected';
  }
  if (entry.kind === 'garbled' || entry.request.env.CNI_COMMAND !== 'DEL') {
    await setAside(path, FAILED_SUFFIX);
    deps.log.error('spool file is not a DEL request; kept as .failed', { file: name });
    return 'failed';
  }
  const req = entry.request;
  const res = await deps.handle(req, guardOf(path));
  if (res.exitCode === 0) {
    deps.log.info('replayed spooled DEL', { file: name, containerId: req.env.CNI_CONTAINERID });
    return 'replayed';
  }
  if (refusedForGood(res)) {
    await setAside(path, FAILED_SUFFIX);
    deps.log.error('spooled DEL refused as invalid; kept as .failed', {
      file: name,
      answer: res.stdout.trim(),
    });
    return 'failed';
  }
  deps.log.warn('spooled DEL failed; kept for the next drain', { file: name, answer: res.stdout.trim() });
  return 'retrying';
}

export async function drainDelSpool(dir: string, deps: DrainDeps): Promise<DrainResult> {
  const counts = { replayed: 0, retrying: 0, failed: 0, rejected: 0, errors: 0 };
  for (const name of spoolEntryNames(dir)) {
    try {
      const outcome = await drainEntry(dir, name, deps);
      if (outcome !== 'gone') counts[outcome]++;
    } catch (err) {
      counts.errors++;
      deps.log.error('spool entry could not be handled; left in place, the drain goes on', {
        file: name,
        error: errorText(err),
      });
    }
  }
  if (counts.failed + counts.rejected > 0) {
    try {
      await syncDir(dir);
    } catch (err) {
      deps.log.error('cannot fsync the DEL spool dir', { dir, error: errorText(err) });
    }
  }
  return counts;
}

/** A drain of the DEL spool that never overlaps itself and never throws (failures are logged). */
export function spoolDrainer(dir: string, handle: DrainDeps['handle'], log: Logger): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= drainDelSpool(dir, { handle, log })
      .then((r) => {
        if (r.replayed + r.retrying + r.failed + r.rejected + r.errors > 0)
          log.info('DEL spool drained', { ...r });
      })
      .catch((err: unknown) => log.error('DEL spool drain failed', { dir, error: errorText(err) }))
      .finally(() => {
        running = undefined;
      });
    return running;
  };
}
