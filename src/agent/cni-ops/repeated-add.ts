// A repeated ADD: CNI 1.0 says an ADD for an interface that already exists in the container fails.
import { CNI_ERR_ATTACHMENT_EXISTS, CniError } from '../../cni/errors.ts';
import type { Attachment } from '../../plan/attachment.ts';
import type { DelContext } from '../context.ts';

/**
 * CNI 1.0: an ADD for an attachment whose interface exists in the container fails, and the
 * attachment stays as it is (the runtime DELs before it adds again). A record whose interface is
 * not in the given namespace is rebuilt instead.
 */
export async function refuseRepeatedAdd(ctx: DelContext, existing: Attachment, netns: string): Promise<void> {
  // Only what the record names is read: the pod controls the rest of its namespace.
  const pod = await ctx.dataplane.observePod(netns, existing.resources);
  if (!pod.reachable || !pod.links.some((l) => l.ifname === existing.key.ifName)) return;
  const ip = ctx.ledger.addressOf(existing)?.ip;
  throw new CniError(
    CNI_ERR_ATTACHMENT_EXISTS,
    `interface ${existing.key.ifName} of container ${existing.key.containerId} already exists`,
    `attached since ${new Date(existing.createdAt).toISOString()}${ip === undefined ? '' : ` with ${ip}`}; ` +
      'a repeated ADD is refused (CNI spec): DEL the attachment first',
  );
}
