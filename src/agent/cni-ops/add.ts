// ADD: allocate an address from the pool (in memory, never waiting on the cloud while one is free),
// write the attachment's pod plan to the ledger before touching the kernel, build exactly that
// plan, record the result durably, answer.
import {
  CNI_ERR_CONTAINER_UNKNOWN,
  CNI_ERR_INVALID_ENV,
  CNI_ERR_TRY_AGAIN_LATER,
  CniError,
} from '../../cni/errors.ts';
import type { CniResult } from '../../cni/result.ts';
import { errorText } from '../../infra/error-text.ts';
import { PoolExhaustedError } from '../../ipam/pool/pool-addresses.ts';
import { type Attachment, attachmentKeyString } from '../../plan/attachment.ts';
import { PRIMARY_POD_IF, planRegularPod } from '../../plan/pod-plan.ts';
import { type Resource, vethOf, vpcAddressOf } from '../../plan/resource.ts';
import type { PooledAddress } from '../address-source.ts';
import { addBranchAttachment } from '../branch/add-branch.ts';
import { branchTarget } from '../branch/assignment.ts';
import type { AddContext, AttachRequest } from '../context.ts';
import { egressAddressFor } from '../egress-addresses.ts';
import { ipv6Plan } from '../ipv6/ipv6-add.ts';
import { refuseRepeatedAdd } from './repeated-add.ts';
import { resultFor } from './result.ts';

/** The plan of a regular pod for this request and address (with ENABLE_V6_EGRESS, its v6if0 too). */
export function regularPlan(ctx: AddContext, req: AttachRequest, addr: PooledAddress): Resource[] {
  const v6EgressIp = egressAddressFor(ctx, ctx.v6Egress, req.key.ifName === PRIMARY_POD_IF, addr);
  return planRegularPod({
    key: req.key,
    vethPrefix: req.vethPrefix ?? ctx.vethPrefix,
    ip: addr.ip,
    eniId: addr.eniId,
    routeTable: addr.routeTable,
    mtu: req.mtu ?? ctx.defaultMtu,
    snat: !ctx.externalSnat,
    ...(v6EgressIp === undefined ? {} : { v6EgressIp }),
  });
}

/**
 * An IPv6 address (ENABLE_IPv6) gets the IPv6 pod plan, an IPv4 one the regular plan. The pool
 * hands out valid addresses only, so a colon tells them apart: node:net's isIPv6 runs a large
 * regular expression whose first use compiles it, a cost the first ADD after a start would pay.
 */
function podPlan(ctx: AddContext, req: AttachRequest, addr: PooledAddress): Resource[] {
  return addr.ip.includes(':') ? ipv6Plan(ctx, req, addr) : regularPlan(ctx, req, addr);
}

/**
 * An address from the pool: at once when one is free (ADD never waits on the cloud then);
 * otherwise wait for the pool manager to grow the pool, until the deadline. Several waiting
 * ADDs wake together when addresses arrive; one that loses the race waits again.
 */
async function obtainAddress(ctx: AddContext, owner: string): Promise<PooledAddress> {
  const deadline = ctx.now() + ctx.addWaitMs;
  for (;;) {
    const got = ctx.addresses.allocate(owner);
    if (got) return got;
    const left = deadline - ctx.now();
    try {
      if (left <= 0) throw new Error(`no address became free within ${ctx.addWaitMs} ms`);
      await ctx.addresses.waitForAddress(left);
    } catch (err) {
      // The pool's growth waiting for EC2 tokens is said in the message itself: it is the one
      // cause of an empty pool that EC2's account-wide limits, not this node, decide.
      const ec2 = err instanceof PoolExhaustedError && err.waitingForEc2;
      const msg = ec2
        ? 'no free VPC address on this node yet: the pool waits for EC2 API tokens'
        : 'no free VPC address on this node';
      throw new CniError(CNI_ERR_TRY_AGAIN_LATER, msg, errorText(err));
    }
  }
}

export async function addAttachment(ctx: AddContext, req: AttachRequest): Promise<CniResult> {
  const started = performance.now();
  const netns = req.netns;
  if (netns === undefined || netns === '')
    throw new CniError(CNI_ERR_INVALID_ENV, 'CNI_NETNS is required for ADD');
  // One look at the path (netns-inspection.ts). The identity is read once: the record keeps it,
  // so a reused path is never mistaken for this namespace.
  const { exists, notNetns, identity: netnsId } = await ctx.inspectNetns(netns);
  if (!exists) {
    throw new CniError(CNI_ERR_CONTAINER_UNKNOWN, `network namespace ${netns} does not exist`);
  }
  // Entering something that is no network namespace would build the pod's network nowhere it can
  // use, or (a namespace of another kind) fail half-way: refused before anything is touched.
  if (notNetns !== undefined) {
    throw new CniError(
      CNI_ERR_INVALID_ENV,
      `CNI_NETNS ${netns} is not a network namespace: it is ${notNetns}`,
      'a pod network is built only in a network namespace of its own',
    );
  }
  // A pod's network goes into a namespace of its own: never the node's (its links, routes and
  // rules are the node's, and a pod plan there would collide with them or replace them).
  if (netnsId !== undefined && ctx.notPodNetns?.has(netnsId)) {
    throw new CniError(
      CNI_ERR_INVALID_ENV,
      `CNI_NETNS ${netns} is the node's own network namespace`,
      'a pod network is built only in a namespace of its own',
    );
  }
  const branch = await branchTarget(ctx, req);
  if (branch) return addBranchAttachment(ctx, req, { path: netns, id: netnsId }, branch);
  const existing = ctx.ledger.get(req.key);
  if (existing && existing.phase === undefined) await refuseRepeatedAdd(ctx, existing, netns);
  // A half-done ADD, or a record whose interface is not in the namespace (gone with an old one),
  // keeps its address and plan: its kernel state is made again.
  if (existing) await ctx.dataplane.remove(existing.resources, { netns: existing.netns });

  const address = existing ? vpcAddressOf(existing.resources) : undefined;
  const resources =
    existing && address
      ? existing.resources
      : podPlan(ctx, req, await obtainAddress(ctx, attachmentKeyString(req.key)));
  const vpcAddress = vpcAddressOf(resources);
  const base = {
    key: req.key,
    pod: req.pod,
    netns,
    ...(netnsId !== undefined ? { netnsId } : {}),
    createdAt: ctx.now(),
    resources,
  };
  // Written before the kernel is touched: if the agent dies from here on, the record of what this
  // ADD may create is there when it starts again, so recovery removes exactly that (ownership).
  // Written, not yet synced (Ledger.stage): what it guards against is the agent's process dying;
  // a power cut loses the pod's veth, routes and rules with the page cache, and the address is
  // the pool's either way. The answer still waits for the durable commit below, which syncs both.
  const t0 = performance.now();
  ctx.ledger.put({ ...base, phase: 'adding' });
  await ctx.ledger.stage();
  const t1 = performance.now();
  try {
    await ctx.dataplane.create(netns, resources);
  } catch (err) {
    await forgetFailedAdd(ctx, req, resources, existing !== undefined);
    throw err;
  }
  const t2 = performance.now();
  const att: Attachment = base;
  ctx.ledger.put(att);
  await ctx.ledger.commit();
  const t3 = performance.now();
  ctx.log.info('attached', {
    key: req.key,
    pod: req.pod,
    ip: vpcAddress?.ip,
    eni: vpcAddress?.eniId,
    hostVeth: vethOf(resources)?.hostName,
    // Where an ADD's time goes: the checks before it (namespace, spool, line), the two durable
    // ledger writes and the kernel work; `at` (epoch ms) lets a burst's arrivals be lined up.
    at: round(performance.timeOrigin + started),
    ms: {
      checks: round(t0 - started),
      ledgerIntent: round(t1 - t0),
      kernel: round(t2 - t1),
      ledgerDone: round(t3 - t2),
    },
  });
  return resultFor(att);
}

/**
 * After a failed create. Ownership: whatever of this attachment's plan is still in the kernel
 * (the dataplane's rollback may have been incomplete) is removed before the record goes; if that
 * fails too, the 'adding' record stays, so a DEL or the recovery at start removes it.
 * An address a pod may already have used (a rebuild) cools down; a fresh one is free at once.
 */
async function forgetFailedAdd(
  ctx: AddContext,
  req: AttachRequest,
  resources: readonly Resource[],
  wasInUse: boolean,
): Promise<void> {
  try {
    await ctx.dataplane.remove(resources, req.netns === undefined ? {} : { netns: req.netns });
  } catch (cleanupErr) {
    ctx.log.error('failed ADD left kernel state behind; its record stays for DEL or recovery', {
      key: req.key,
      error: errorText(cleanupErr),
    });
    return;
  }
  ctx.ledger.remove(req.key);
  const address = vpcAddressOf(resources);
  if (address) {
    if (wasInUse) ctx.addresses.release(address.ip, address.eniId);
    else ctx.addresses.unreserve(address.ip);
  }
  await ctx.ledger.commit();
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
