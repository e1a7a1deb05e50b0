// The Event on a pod whose stale DEL the ownership rule kept from tearing down the network of
// another sandbox (upstream #1644's failure, prevented): operators see it with `kubectl describe
// pod`. Best effort: the recorder only queues (src/pods/kube-events.ts).
import type { Attachment } from '../../plan/attachment.ts';
import type { BranchBinding } from '../../plan/binding.ts';
import type { DelContext } from '../context.ts';

export const PREVENTED_TEARDOWN_REASON = 'StaleDeleteKeptNetwork';

export function reportPreventedTeardown(ctx: DelContext, deleted: Attachment, b: BranchBinding): void {
  const { namespace, name, uid } = deleted.pod;
  if (ctx.events === undefined || namespace === undefined || name === undefined) return;
  const owner =
    b.supersededBy !== undefined
      ? `another pod (${b.supersededBy}) now has its VLAN ID or address`
      : `sandbox ${b.holder?.containerId ?? '?'} of the pod holds them`;
  ctx.events.emit({
    involved: { kind: 'Pod', namespace, name, ...(uid === undefined ? {} : { uid }) },
    type: 'Normal',
    reason: PREVENTED_TEARDOWN_REASON,
    message: `DEL of sandbox ${deleted.key.containerId} removed only its own interface; the branch ENI's VLAN ${b.vlanId} device, route table ${b.table} and rules were kept: ${owner}`,
  });
}
