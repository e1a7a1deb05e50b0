// CHECK: the attachment the ledger records must still be what the kernel has.
import { CNI_ERR_CHECK_DRIFT, CNI_ERR_CONTAINER_UNKNOWN, CniError } from '../cni/errors.ts';
import { podSpecFor } from './add.ts';
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
  for (const ip of req.prevResultIps) {
    if (ip !== att.ip) problems.push(`prevResult names address ${ip}, the attachment has ${att.ip}`);
  }
  const spec = podSpecFor(ctx, { ...req, mtu: att.mtu }, req.netns || att.netns, att);
  problems.push(...(await ctx.dataplane.inspectPod(spec)));
  if (problems.length > 0) {
    throw new CniError(
      CNI_ERR_CHECK_DRIFT,
      `attachment of container ${req.key.containerId} has drifted`,
      problems.join('; '),
    );
  }
}
