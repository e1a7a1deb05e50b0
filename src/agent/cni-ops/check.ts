// CHECK: the attachment the ledger records must still be what the kernel has.
import { CNI_ERR_CHECK_DRIFT, CNI_ERR_CONTAINER_UNKNOWN, CniError } from '../../cni/errors.ts';
import { type Attachment, attachmentHostVeth, sameAttachmentKey } from '../../plan/attachment.ts';
import { planBranchShared } from '../../plan/branch-plan.ts';
import { type Resource, vpcAddressOf } from '../../plan/resource.ts';
import { recordFor } from '../adoption/adopted-lookup.ts';
import type { AttachRequest, CheckContext } from '../context.ts';
import { podAddress } from './result.ts';

export async function checkAttachment(ctx: CheckContext, req: AttachRequest): Promise<void> {
  const att = recordFor(ctx.ledger, req.key);
  if (!att || att.phase !== undefined) {
    throw new CniError(
      CNI_ERR_CONTAINER_UNKNOWN,
      `vpcnet has no attachment for container ${req.key.containerId} ${req.key.ifName}`,
    );
  }
  const problems: string[] = [];
  const ip = podAddress(att);
  for (const prev of req.prevResultIps) {
    if (prev !== ip) problems.push(`prevResult names address ${prev}, the attachment has ${ip ?? 'none'}`);
  }
  const address = vpcAddressOf(att.resources);
  const lost = address === undefined ? undefined : ctx.addresses.lostEni?.(address.eniId);
  if (address && lost) {
    problems.push(
      `address ${address.ip} is on ENI ${address.eniId}, which EC2 no longer lists as attached to this node (since ${new Date(lost.since).toISOString()}); the pod needs a new sandbox`,
    );
  }
  const netns = req.netns || att.netns;
  const branch = att.branch === undefined ? undefined : branchShare(ctx, att, att.branch);
  // One look at the kernel judges the sandbox's own plan and, when it holds them, its binding's.
  const seen = await ctx.dataplane.inspect(netns, [...att.resources, ...(branch?.resources ?? [])]);
  if (seen.podUnreachable !== undefined)
    problems.push(`pod netns ${netns} unreachable: ${seen.podUnreachable}`);
  problems.push(...seen.findings.map((f) => f.problem), ...(branch?.problems ?? []));
  if (problems.length > 0) {
    throw new CniError(
      CNI_ERR_CHECK_DRIFT,
      `attachment of container ${req.key.containerId} has drifted`,
      problems.join('; '),
    );
  }
}

/**
 * A sandbox on a branch ENI is whole only while it holds the binding and the binding's resources
 * are there: either why it cannot be whole, or the binding's resources to judge.
 */
function branchShare(
  ctx: CheckContext,
  att: Attachment,
  key: string,
): { problems: string[]; resources: Resource[] } {
  const b = ctx.ledger.binding(key);
  const not = (problem: string) => ({ problems: [problem], resources: [] });
  if (!b) return not(`branch binding ${key} is not recorded`);
  if (b.supersededBy !== undefined)
    return not(`the branch ENI's VLAN ID or address now belongs to another pod (${b.supersededBy})`);
  if (!b.holder || !sameAttachmentKey(b.holder, att.key)) {
    return not(
      `another sandbox of the pod (container ${b.holder?.containerId ?? 'none'}) holds its branch ENI`,
    );
  }
  return { problems: [], resources: planBranchShared(b, attachmentHostVeth(att)) };
}
