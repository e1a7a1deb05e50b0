// ADD of a sandbox of a pod with its own security groups. The sandbox gets its own veth (named from
// its attachment key), and takes over the pod's branch binding: the routes and rules are pointed at
// its veth in place, and only what is missing is created. No ADD deletes a device another live
// sandbox holds; the only shared resources an ADD removes are those of a binding whose VLAN ID or
// address the resource controller has since given to this pod, as EC2 and the Kubernetes API (not
// the annotation) say (claim.ts, admit.ts).
import { admitBinding } from '../../bindings/admit.ts';
import { settleBinding } from '../../bindings/settle.ts';
import { CNI_ERR_INTERNAL, CNI_ERR_TRY_AGAIN_LATER, CniError } from '../../cni/errors.ts';
import type { CniResult } from '../../cni/result.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Attachment } from '../../plan/attachment.ts';
import { planBranchAttachment } from '../../plan/branch-plan.ts';
import { vpcAddressOf } from '../../plan/resource.ts';
import { refuseRepeatedAdd } from '../cni-ops/repeated-add.ts';
import { resultFor } from '../cni-ops/result.ts';
import type { AddContext, AttachRequest } from '../context.ts';
import type { BranchTarget } from './assignment.ts';
import { checkBranchClaim } from './claim.ts';

export async function addBranchAttachment(
  ctx: AddContext,
  req: AttachRequest,
  ns: { readonly path: string; readonly id: string | undefined },
  target: BranchTarget,
): Promise<CniResult> {
  const { ledger, dataplane, log } = ctx;
  const deps = { ledger, dataplane, log };
  const { eni, pod, trunk } = target;
  const { path: netns, id: netnsId } = ns;
  const existing = ledger.get(req.key);
  if (existing && existing.phase === undefined) await refuseRepeatedAdd(ctx, existing, netns);
  refuseSecondInterface(ctx, req);
  // The annotation is a claim: EC2 and the Kubernetes API decide (claim.ts). Checked before
  // anything changes, so a refused claim leaves every other pod as it was.
  if (ctx.trunkFacts === undefined) {
    throw new CniError(
      CNI_ERR_TRY_AGAIN_LATER,
      `pod ${pod.namespace}/${pod.name} has branch ENI ${eni.eniId}, and this agent cannot read EC2's trunk associations to confirm it`,
    );
  }
  const claim = await checkBranchClaim(
    {
      ledger,
      addresses: ctx.addresses,
      pods: ctx.pods,
      trunkFacts: ctx.trunkFacts,
      counters: ctx.counters,
      log,
    },
    target,
  );
  if (existing) {
    await dataplane.remove(existing.resources, { netns: existing.netns });
    ledger.remove(req.key);
    // A regular attachment of the same key (the pod had no branch ENI then) gives its address back.
    const address = vpcAddressOf(existing.resources);
    if (address) ctx.addresses.release(address.ip, address.eniId);
  }
  const admitted = admitBinding(
    ledger,
    {
      pod: { namespace: pod.namespace, name: pod.name, uid: pod.uid },
      eniId: eni.eniId,
      mac: eni.mac,
      ip: eni.ip,
      vlanId: eni.vlanId,
      subnetCidr: eni.subnetCidr,
      gateway: eni.gateway,
      trunkDev: trunk.dev,
      mode: req.enforcingMode ?? ctx.enforcingMode,
      driver: ctx.trunkDriver,
      mtu: req.mtu ?? ctx.defaultMtu,
      now: ctx.now(),
    },
    claim.supersede,
  );
  const previousHolder = ledger.binding(admitted.key)?.holder;
  const own = planBranchAttachment({
    key: req.key,
    vethPrefix: req.vethPrefix ?? ctx.vethPrefix,
    ip: eni.ip,
    mtu: req.mtu ?? ctx.defaultMtu,
  });
  const att: Attachment = {
    key: req.key,
    pod: { ...req.pod, uid: pod.uid },
    netns,
    ...(netnsId !== undefined ? { netnsId } : {}),
    createdAt: ctx.now(),
    resources: own,
    branch: admitted.key,
  };
  // Durable before the kernel: the sandbox's record, its binding, and any binding it supersedes.
  ledger.put({ ...att, phase: 'adding' });
  await ledger.commit();
  for (const key of admitted.superseded) {
    const old = ledger.binding(key);
    ctx.counters.count('supersededBindings');
    log.warn(
      'branch binding superseded: the resource controller gave its VLAN ID or address to another pod',
      {
        binding: key,
        pod: old?.pod,
        vlanId: old?.vlanId,
        by: admitted.key,
        byPod: att.pod,
      },
    );
    await settleBinding(deps, key);
  }
  try {
    await dataplane.create(netns, own);
    await settleBinding(deps, admitted.key, req.key);
  } catch (err) {
    await forgetFailedBranchAdd(ctx, att);
    throw err;
  }
  ledger.put(att);
  await ledger.commit();
  if (previousHolder && previousHolder.containerId !== req.key.containerId)
    ctx.counters.count('holderTakeovers');
  log.info('attached to branch ENI', {
    key: req.key,
    pod: att.pod,
    eni: eni.eniId,
    vlanId: eni.vlanId,
    ip: eni.ip,
    binding: admitted.key,
    tookOverFrom: previousHolder?.containerId,
  });
  return resultFor(att);
}

/**
 * A pod with its own security groups has one interface on its branch ENI. Another interface of the
 * same sandbox would either take the branch ENI over from the first or get the node's security
 * groups: refused, with the interface that has it named.
 */
function refuseSecondInterface(ctx: AddContext, req: AttachRequest): void {
  const other = ctx.ledger
    .list()
    .find(
      (a) =>
        a.branch !== undefined &&
        a.key.network === req.key.network &&
        a.key.containerId === req.key.containerId &&
        a.key.ifName !== req.key.ifName,
    );
  if (!other) return;
  throw new CniError(
    CNI_ERR_INTERNAL,
    `container ${req.key.containerId} already has its pod's branch ENI on ${other.key.ifName}`,
    `a pod with its own security groups gets one vpcnet interface; ${req.key.ifName} is refused rather than given the node's security groups`,
  );
}

/** A failed ADD removes its own part, then the binding goes back to whoever can hold it (or away). */
async function forgetFailedBranchAdd(ctx: AddContext, att: Attachment): Promise<void> {
  try {
    await ctx.dataplane.remove(att.resources, { netns: att.netns });
  } catch (err) {
    ctx.log.error('failed ADD left kernel state behind; its record stays for DEL or recovery', {
      key: att.key,
      error: errorText(err),
    });
    return;
  }
  ctx.ledger.remove(att.key);
  await ctx.ledger.commit();
  if (att.branch === undefined) return;
  await settleBinding(ctx, att.branch).catch((err: unknown) =>
    ctx.log.error('branch binding not settled after a failed ADD; the reconcile loop retries', {
      binding: att.branch,
      error: errorText(err),
    }),
  );
}
