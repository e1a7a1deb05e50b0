// The plugin spools DELs it could not hand to the agent (docs/design.md, The plugin): the agent down, or
// not answering. The agent replays them in arrival order (file names sort by arrival) through
// the same handler as live requests: before it serves, and then periodically, because a DEL can
// be spooled while the agent runs (a refused or reset connection during a restart or rollout).
// A DEL that fails for a reason that may pass is kept and retried; one that can never apply
// (unreadable, or refused as invalid) is kept renamed `.failed`, never dropped.
import { open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CNI_ERR_DECODE,
  CNI_ERR_INCOMPATIBLE_VERSION,
  CNI_ERR_INVALID_ENV,
  CNI_ERR_INVALID_NETCONF,
  CNI_ERR_UNSUPPORTED_FIELD,
} from '../cni/errors.ts';
import {
  type ForwardedRequest,
  type ForwardedResponse,
  SPOOL_FILE_SUFFIX,
  SPOOL_TEMP_PREFIX,
} from '../cni/wire.ts';
import type { Logger } from '../infra/log.ts';

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

function parseSpooled(text: string): ForwardedRequest | undefined {
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

/** When the plugin spooled it: file names start with the wall-clock ms (src/plugin/spool.ts). */
export function spooledAt(name: string): number | undefined {
  const m = /^(\d{15})-/.exec(name);
  return m ? Number(m[1]) : undefined;
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
  /** Dropped: the attachment it names was created after the DEL was spooled. */
  readonly stale: number;
}

export interface DrainDeps {
  readonly handle: (req: ForwardedRequest) => Promise<ForwardedResponse>;
  /**
   * Whether the attachment this DEL names was created after `spooledAtMs`: the DEL is for an
   * earlier attachment with the same key (a reused container ID) and must not remove this one.
   */
  readonly isStale: (req: ForwardedRequest, spooledAtMs: number) => boolean;
  readonly log: Logger;
}

export async function drainDelSpool(dir: string, deps: DrainDeps): Promise<DrainResult> {
  let names: string[];
  try {
    names = (await readdir(dir))
      .filter((n) => n.endsWith(SPOOL_FILE_SUFFIX) && !n.startsWith(SPOOL_TEMP_PREFIX))
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return { replayed: 0, retrying: 0, failed: 0, stale: 0 };
    throw err;
  }
  let replayed = 0;
  let retrying = 0;
  let failed = 0;
  let stale = 0;
  for (const name of names) {
    const path = join(dir, name);
    const req = parseSpooled(await readFile(path, 'utf8'));
    const at = spooledAt(name);
    if (req === undefined || req.env.CNI_COMMAND !== 'DEL') {
      await rename(path, `${path}.failed`);
      failed++;
      deps.log.error('spool file is not a DEL request; kept as .failed', { file: name });
      continue;
    }
    if (at !== undefined && deps.isStale(req, at)) {
      await unlink(path);
      stale++;
      deps.log.warn('dropped a spooled DEL older than the attachment it names (reused container ID)', {
        file: name,
        containerId: req.env.CNI_CONTAINERID,
      });
      continue;
    }
    const res = await deps.handle(req);
    if (res.exitCode === 0) {
      await unlink(path);
      replayed++;
      deps.log.info('replayed spooled DEL', { file: name, containerId: req.env.CNI_CONTAINERID });
    } else if (refusedForGood(res)) {
      await rename(path, `${path}.failed`);
      failed++;
      deps.log.error('spooled DEL refused as invalid; kept as .failed', {
        file: name,
        answer: res.stdout.trim(),
      });
    } else {
      retrying++;
      deps.log.warn('spooled DEL failed; kept for the next drain', { file: name, answer: res.stdout.trim() });
    }
  }
  if (replayed + failed + stale > 0) await syncDir(dir);
  return { replayed, retrying, failed, stale };
}
