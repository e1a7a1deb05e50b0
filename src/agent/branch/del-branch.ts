// DEL of a sandbox of a pod with its own security groups: it removes its own veth and record, then
// the binding is settled: if the sandbox held the branch ENI and another live sandbox of the pod
// is still there, the holding passes to it; the device, table and rules go only with the last
// sandbox. Every teardown the ownership rule prevents is logged (both sandboxes, the pod, what was
// kept) and counted.
import { settleBinding } from '../../bindings/settle.ts';
import { errorText } from '../../infra/error-text.ts';
import { type Attachment, sameAttachmentKey } from '../../plan/attachment.ts';
import { branchDeviceName } from '../../plan/branch-plan.ts';
import { reportPreventedTeardown } from '../cni-ops/teardown-event.ts';
import type { DelContext } from '../context.ts';

export async function delBranchAttachment(ctx: DelContext, att: Attachment, binding: string): Promise<void> {
  const { ledger, dataplane, log } = ctx;
  await dataplane.remove(att.resources, { netns: att.netns });
  ledger.remove(att.key);
  await ledger.commit();
  const b = ledger.binding(binding);
  if (!b) return;
  const wasHolder = b.holder !== undefined && sameAttachmentKey(b.holder, att.key);
  const others = ledger.bindingMembers(binding);
  if (b.supersededBy !== undefined || (!wasHolder && others.length > 0)) {
    ctx.counters.count('preventedTeardowns');
    reportPreventedTeardown(ctx, att, b);
    log.info('DEL removed only its own sandbox: the branch ENI resources belong to another', {
      deleted: att.key.containerId,
      pod: att.pod,
      binding,
      device: branchDeviceName(b.key),
      vlanId: b.vlanId,
      table: b.table,
      ...(b.supersededBy !== undefined
        ? { reason: 'the VLAN ID or address now belongs to another pod', owner: b.supersededBy }
        : { reason: 'another sandbox of the pod holds them', holder: b.holder?.containerId }),
    });
  }
  try {
    const settled = await settleBinding(ctx, binding);
    if (settled.tornDown) log.info('branch binding removed with its last sandbox', { binding, pod: att.pod });
  } catch (err) {
    // The sandbox is gone; the binding's convergence is the reconcile loop's to finish.
    log.error('branch binding not settled after DEL; the reconcile loop retries', {
      binding,
      error: errorText(err),
    });
  }
}
