// ADD: allocate an address from the pool (in memory, never waiting on the cloud while one is free),
// record the attachment durably before touching the kernel, build the pod's network, record the
// result durably, answer.
import {
  CNI_ERR_CONTAINER_UNKNOWN,
  CNI_ERR_INTERNAL,
  CNI_ERR_TRY_AGAIN_LATER,
  CniError,
} from '../cni/errors.ts';
import type { CniResult } from '../cni/result.ts';
import {
  MAIN_TABLE,
  POD_GATEWAY,
  type PodNetworkSpec,
  RULE_PRIORITY_FROM_POD,
  RULE_PRIORITY_TO_POD,
} from '../dataplane/dataplane.ts';
import { hostVethMac, hostVethName } from '../dataplane/names.ts';
import type { Attachment, OwnedResource } from '../ledger/attachment.ts';
import type { PooledAddress } from './address-source.ts';
import type { AttachRequest, OperationContext } from './context.ts';

/** What an attachment will own once its ADD completes; recorded before the first kernel change. */
export function plannedResources(spec: PodNetworkSpec, eniId: string): OwnedResource[] {
  const out: OwnedResource[] = [
    { kind: 'address', ip: spec.ip, eniId },
    { kind: 'veth', hostName: spec.hostVeth },
    { kind: 'hostRoute', dst: `${spec.ip}/32`, dev: spec.hostVeth },
    { kind: 'rule', priority: RULE_PRIORITY_TO_POD, to: `${spec.ip}/32`, table: MAIN_TABLE },
  ];
  if (spec.routeTable !== MAIN_TABLE) {
    out.push({
      kind: 'rule',
      priority: RULE_PRIORITY_FROM_POD,
      from: `${spec.ip}/32`,
      table: spec.routeTable,
    });
  }
  if (spec.snat) out.push({ kind: 'snat', ip: spec.ip });
  return out;
}

export function podSpecFor(
  ctx: OperationContext,
  req: AttachRequest,
  netns: string,
  addr: PooledAddress,
): PodNetworkSpec {
  const prefix = req.vethPrefix ?? ctx.vethPrefix;
  return {
    netnsPath: netns,
    ifName: req.key.ifName,
    hostVeth: hostVethName(req.key, prefix),
    hostMac: hostVethMac(req.key),
    ip: addr.ip,
    mtu: req.mtu ?? ctx.defaultMtu,
    routeTable: addr.routeTable,
    snat: true,
  };
}

export function resultFor(att: Attachment, hostMac: string, podMac: string | undefined): CniResult {
  return {
    interfaces: [
      { name: att.hostVeth, mac: hostMac },
      { name: att.key.ifName, ...(podMac ? { mac: podMac } : {}), sandbox: att.netns },
    ],
    ips: [{ address: `${att.ip}/32`, gateway: POD_GATEWAY, interface: 1 }],
    routes: [{ dst: '0.0.0.0/0', gw: POD_GATEWAY }],
    dns: {},
  };
}

/**
 * An address from the pool: at once when one is free (ADD never waits on the cloud then);
 * otherwise wait for the pool manager to grow the pool, until the deadline. Several waiting
 * ADDs wake together when addresses arrive; one that loses the race waits again.
 */
async function obtainAddress(ctx: OperationContext, owner: string): Promise<PooledAddress> {
  const deadline = ctx.now() + ctx.addWaitMs;
  for (;;) {
    const got = ctx.addresses.allocate(owner);
    if (got) return got;
    const left = deadline - ctx.now();
    try {
      if (left <= 0) throw new Error(`no address became free within ${ctx.addWaitMs} ms`);
      await ctx.addresses.waitForAddress(left);
    } catch (err) {
      throw new CniError(CNI_ERR_TRY_AGAIN_LATER, 'no free VPC address on this node', (err as Error).message);
    }
  }
}

export const POD_ENI_ANNOTATION = 'vpc.amazonaws.com/pod-eni';

/**
 * With ENABLE_POD_ENI on, a pod the resource controller gave a branch ENI must get that ENI's
 * security groups. vpcnet cannot do that yet, so it refuses the pod instead of quietly giving it
 * the node's. The pod's annotations come from the Kubernetes API (DESIGN.md, Pods).
 */
async function refuseBranchEniPods(ctx: OperationContext, req: AttachRequest): Promise<void> {
  if (!ctx.enablePodEni || !req.pod.namespace || !req.pod.name) return;
  let pod: Awaited<ReturnType<OperationContext['pods']['lookup']>>;
  try {
    pod = await ctx.pods.lookup(req.pod.namespace, req.pod.name);
  } catch (err) {
    throw new CniError(
      CNI_ERR_TRY_AGAIN_LATER,
      `cannot read pod ${req.pod.namespace}/${req.pod.name} from the Kubernetes API (ENABLE_POD_ENI=true needs it)`,
      err instanceof Error ? err.message : String(err),
    );
  }
  if (pod?.annotations[POD_ENI_ANNOTATION] !== undefined) {
    throw new CniError(
      CNI_ERR_INTERNAL,
      `pod ${req.pod.namespace}/${req.pod.name} has a branch ENI (${POD_ENI_ANNOTATION}), and branch-ENI networking is not built yet`,
      "refused rather than giving the pod the node's security groups",
    );
  }
}

export async function addAttachment(ctx: OperationContext, req: AttachRequest): Promise<CniResult> {
  const netns = req.netns;
  if (netns === undefined || netns === '') throw new CniError(4, 'CNI_NETNS is required for ADD');
  if (!(await ctx.netnsExists(netns))) {
    throw new CniError(CNI_ERR_CONTAINER_UNKNOWN, `network namespace ${netns} does not exist`);
  }
  await refuseBranchEniPods(ctx, req);
  const existing = ctx.ledger.get(req.key);
  if (existing && existing.phase === undefined) {
    // A repeated ADD for the same attachment: answer from the ledger if the kernel still matches.
    const spec = podSpecFor(ctx, req, existing.netns, existing);
    const problems = await ctx.dataplane.inspectPod(spec);
    if (problems.length === 0) {
      // Durable before success: an earlier commit of this record may have failed.
      await ctx.ledger.commit();
      return resultFor(existing, spec.hostMac, undefined);
    }
    ctx.log.warn('repeated ADD finds drift; rebuilding', { key: req.key, problems });
  }
  if (existing) await removeForRebuild(ctx, existing);

  const ownerKey = `${req.key.network}/${req.key.containerId}/${req.key.ifName}`;
  const addr: PooledAddress = existing
    ? { ip: existing.ip, eniId: existing.eniId, routeTable: existing.routeTable }
    : await obtainAddress(ctx, ownerKey);
  const spec = podSpecFor(ctx, req, netns, addr);
  const netnsId = await ctx.netnsIdentity(netns);
  const base = {
    key: req.key,
    pod: req.pod,
    netns,
    ...(netnsId !== undefined ? { netnsId } : {}),
    ip: addr.ip,
    eniId: addr.eniId,
    routeTable: addr.routeTable,
    hostVeth: spec.hostVeth,
    mtu: spec.mtu,
    createdAt: ctx.now(),
  };
  // Durable before success, and before the kernel: a crash from here on leaves a record of what
  // this ADD may have created, so recovery removes exactly that (ownership).
  const t0 = performance.now();
  ctx.ledger.put({ ...base, phase: 'adding', resources: plannedResources(spec, addr.eniId) });
  await ctx.ledger.commit();
  const t1 = performance.now();

  let podMac: string;
  let resources: OwnedResource[];
  try {
    const done = await ctx.dataplane.addPod(spec);
    podMac = done.podInterface.mac;
    resources = [
      { kind: 'address', ip: addr.ip, eniId: addr.eniId },
      ...done.resources.filter((r) => r.kind !== 'address'),
    ];
  } catch (err) {
    await forgetFailedAdd(ctx, req, spec, addr, existing !== undefined);
    throw err;
  }
  const t2 = performance.now();
  const att: Attachment = { ...base, resources };
  ctx.ledger.put(att);
  await ctx.ledger.commit();
  const t3 = performance.now();
  ctx.log.info('attached', {
    key: req.key,
    pod: req.pod,
    ip: addr.ip,
    eni: addr.eniId,
    hostVeth: spec.hostVeth,
    // Where an ADD's time goes: the two durable ledger writes and the kernel work.
    ms: { ledgerIntent: round(t1 - t0), kernel: round(t2 - t1), ledgerDone: round(t3 - t2) },
  });
  return resultFor(att, spec.hostMac, podMac);
}

/**
 * After a failed addPod. Ownership: whatever of this attachment's planned kernel state is still
 * there (the dataplane's rollback may have been incomplete) is removed before the record goes;
 * if that fails too, the 'adding' record stays, so a DEL or the recovery at start removes it.
 * An address a pod may already have used (a rebuild) cools down; a fresh one is free at once.
 */
async function forgetFailedAdd(
  ctx: OperationContext,
  req: AttachRequest,
  spec: PodNetworkSpec,
  addr: PooledAddress,
  wasInUse: boolean,
): Promise<void> {
  try {
    await ctx.dataplane.removeResources(
      plannedResources(spec, addr.eniId).filter((r) => r.kind !== 'address'),
    );
  } catch (cleanupErr) {
    ctx.log.error('failed ADD left kernel state behind; its record stays for DEL or recovery', {
      key: req.key,
      error: cleanupErr instanceof Error ? cleanupErr.message : String(cleanupErr),
    });
    return;
  }
  ctx.ledger.remove(req.key);
  if (wasInUse) {
    ctx.ledger.addCooling(addr.ip, addr.eniId, ctx.now());
    ctx.addresses.release(addr.ip);
  } else {
    ctx.addresses.unreserve(addr.ip);
  }
  await ctx.ledger.commit();
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** Removes an existing record's kernel state but keeps its address, for a repeated or half-done ADD. */
async function removeForRebuild(ctx: OperationContext, att: Attachment): Promise<void> {
  await ctx.dataplane.removeResources(att.resources.filter((r) => r.kind !== 'address'));
}
