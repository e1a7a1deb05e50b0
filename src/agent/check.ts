// CHECK: the attachment the ledger records must still be what the kernel has.
import { CNI_ERR_CHECK_DRIFT, CNI_ERR_CONTAINER_UNKNOWN, CniError } from '../cni/errors.ts';
import { attachmentIp } from '../plan/attachment.ts';
import type { AttachRequest, OperationContext } from './context.ts';

export async function checkAttachment(ctx: OperationContext, req: AttachRequest): Promise<void> {
  const att = ctx.ledger.get(req.key);
  if (!att || att.phase !== undefined) {
    throw new CniError(
      CNI_ERR_CONTAINER_UNKNOWN,
      `vpcnet has no attachment for container ${req.key.containerId} ${req.key.ifName}`,
    );
  }
  const problems: string[] = [];
  const ip = attachmentIp(att);
  for (const prev of req.prevResultIps) {
    if (prev !== ip) problems.push(`prevResult names address ${prev}, the attachment has ${ip ?? 'none'}`);
  }
  const netns = req.netns || att.netns;
  const seen = await ctx.dataplane.inspect(netns, att.resources);
  if (seen.podUnreachable !== undefined)
    problems.push(`pod netns ${netns} unreachable: ${seen.podUnreachable}`);
  problems.push(...seen.findings.map((f) => f.problem));
  if (problems.length > 0) {
    throw new CniError(
      CNI_ERR_CHECK_DRIFT,
      `attachment of container ${req.key.containerId} has drifted`,
      problems.join('; '),
    );
  }
}
