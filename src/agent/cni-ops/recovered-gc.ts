// CNI GC and recovered records: the runtime's list of valid attachments names every sandbox it
// still has; a recovered record whose host veth no listed key hashes to belongs to none of them.
import type { CniRequest } from '../../cni/request.ts';
import { hostVethName } from '../../plan/names.ts';
import { recoveredHostVeth } from '../../plan/recovered.ts';
import type { DelContext } from '../context.ts';
import { releaseRecovered } from '../recovery/recovered-release.ts';

export async function collectRecoveredNotListed(
  ctx: DelContext,
  req: Extract<CniRequest, { command: 'GC' }>,
): Promise<void> {
  const records = ctx.ledger.recovered();
  if (records.length === 0) return;
  const prefix = req.netConf.vethPrefix ?? ctx.vethPrefix;
  const listed = new Set(
    req.validAttachments.map((a) =>
      hostVethName({ network: req.netConf.name, containerId: a.containerId, ifName: a.ifName }, prefix),
    ),
  );
  let released = 0;
  for (const record of records) {
    const veth = recoveredHostVeth(record);
    if (veth !== undefined && listed.has(veth)) continue;
    if (await releaseRecovered(ctx, record, 'CNI GC: the runtime lists no sandbox for it')) released++;
  }
  if (released > 0) ctx.log.info('GC released recovered records the runtime no longer lists', { released });
}
