// The plugin spools DELs that arrive while the agent is down (DESIGN.md, Plugin). At start, before
// serving, the agent replays them in arrival order (file names sort by arrival) through the same
// handler as live requests. A replayed DEL that fails is kept, renamed `.failed`, never dropped.
import { open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ForwardedRequest,
  type ForwardedResponse,
  SPOOL_FILE_SUFFIX,
  SPOOL_TEMP_PREFIX,
} from '../cni/wire.ts';
import type { Logger } from './log.ts';

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

export interface DrainResult {
  readonly replayed: number;
  readonly failed: number;
}

export async function drainDelSpool(
  dir: string,
  handle: (req: ForwardedRequest) => Promise<ForwardedResponse>,
  log: Logger,
): Promise<DrainResult> {
  let names: string[];
  try {
    names = (await readdir(dir))
      .filter((n) => n.endsWith(SPOOL_FILE_SUFFIX) && !n.startsWith(SPOOL_TEMP_PREFIX))
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { replayed: 0, failed: 0 };
    throw err;
  }
  let replayed = 0;
  let failed = 0;
  for (const name of names) {
    const path = join(dir, name);
    const req = parseSpooled(await readFile(path, 'utf8'));
    const res = req?.env.CNI_COMMAND === 'DEL' ? await handle(req) : undefined;
    if (res?.exitCode === 0) {
      await unlink(path);
      replayed++;
      log.info('replayed spooled DEL', { file: name, containerId: req?.env.CNI_CONTAINERID });
    } else {
      await rename(path, `${path}.failed`);
      failed++;
      log.error('spooled DEL failed; kept as .failed', {
        file: name,
        answer: res?.stdout.trim() ?? 'unreadable spool file',
      });
    }
  }
  if (names.length > 0) await syncDir(dir);
  return { replayed, failed };
}
