// An ADD first applies the DELs spooled for its own attachment key, decided without clocks.
// The runtime serializes the operations of one container, so a DEL of key K that is in the spool
// when an ADD of K arrives was sent before that ADD: it is the DEL of an earlier attachment with
// this key (a reused container ID) and must happen first. Applied here, in the ADD's own pod line
// (calling the DEL logic directly, so nothing waits on that line), and removed from the spool
// durably before the ADD goes on: any entry of K the drain finds later was spooled after this ADD
// and is a real DEL of it (spool-drain.ts).
import { join } from 'node:path';
import { type CniRequest, parseCniRequest } from '../../cni/request.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { type AttachmentKey, attachmentKeyString, sameAttachmentKey } from '../../plan/attachment.ts';
import { consumeEntry, readSpoolEntry, spoolEntryNames } from '../../spool/read.ts';

export type SpooledDel = Extract<CniRequest, { command: 'DEL' }>;

export interface SpoolFirstDeps {
  readonly dir: string;
  readonly log: Logger;
}

/** The spooled DEL at `path` when it is one of `key`, else undefined (anything else is the drain's). */
async function spooledDelOf(path: string, key: AttachmentKey, log: Logger): Promise<SpooledDel | undefined> {
  let entry: Awaited<ReturnType<typeof readSpoolEntry>>;
  try {
    entry = await readSpoolEntry(path);
  } catch (err) {
    log.warn('cannot read a DEL spool entry before ADD; the drain will handle it', {
      file: path,
      error: errorText(err),
    });
    return undefined;
  }
  if (entry.kind !== 'request') return undefined;
  let parsed: CniRequest;
  try {
    parsed = parseCniRequest(entry.request.env, entry.request.stdin);
  } catch {
    return undefined; // the drain keeps it as .failed
  }
  return parsed.command === 'DEL' && sameAttachmentKey(parsed.key, key) ? parsed : undefined;
}

/**
 * Applies, in arrival order, each spooled DEL of `key` with `applyDel`, and removes it from the
 * spool durably. Cheap when the spool is empty or absent (one readdir). A DEL that fails fails the
 * ADD (it stays spooled): the ADD must not attach over an attachment its DEL did not remove.
 */
export async function applySpooledDelsOf(
  key: AttachmentKey,
  deps: SpoolFirstDeps,
  applyDel: (del: SpooledDel) => Promise<void>,
): Promise<number> {
  let applied = 0;
  for (const name of spoolEntryNames(deps.dir)) {
    const path = join(deps.dir, name);
    const del = await spooledDelOf(path, key, deps.log);
    if (del === undefined) continue;
    await applyDel(del);
    await consumeEntry(path);
    applied++;
    deps.log.info('applied a DEL spooled for this key before its ADD (a reused container ID)', {
      key: attachmentKeyString(key),
      file: name,
    });
  }
  return applied;
}
