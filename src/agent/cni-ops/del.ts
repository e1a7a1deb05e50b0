// DEL decides from the ledger (docs/design.md, rule 5 "DEL does not guess"): it removes exactly what
// the attachment (network, containerID, ifName) owns. A stale DEL for a replaced sandbox has a
// different container ID, so it can never touch the new sandbox's veth, address, routes or rules.
// DEL of something unknown, or already gone, succeeds.

import { isIPv4 } from 'node:net';
import { type Attachment, attachmentHostVeth } from '../../plan/attachment.ts';
import { egressVethMac, egressVethName, V4_EGRESS_IF } from '../../plan/ipv6-pod-plan.ts';
import { hostVethMac, hostVethName } from '../../plan/names.ts';
import { MAIN_TABLE, RULE_PRIORITY_TO_POD } from '../../plan/pod-plan.ts';
import { type Resource, vpcAddressOf } from '../../plan/resource.ts';
import { V6_EGRESS_IF, v6EgressVethMac, v6EgressVethName } from '../../plan/v6-egress-plan.ts';
import { recordFor } from '../adoption/adopted-lookup.ts';
import { delBranchAttachment } from '../branch/del-branch.ts';
import type { AttachRequest, DelContext } from '../context.ts';
import { recoveredByVeth, releaseRecovered } from '../recovery/recovered-release.ts';

export async function delAttachment(ctx: DelContext, req: AttachRequest): Promise<void> {
  const att = recordFor(ctx.ledger, req.key);
  if (att?.branch !== undefined) {
    await delBranchAttachment(ctx, att, att.branch);
    ctx.log.info('detached', { key: req.key, hostVeth: attachmentHostVeth(att), binding: att.branch });
    return;
  }
  if (att) {
    // In the pod only what does not go with the veth: a second interface's rule, which names this
    // attachment's own address (so even a namespace that took over the path cannot lose its own).
    // Its SNAT element goes in the same removal: the element goes before the address is released,
    // so no pod given the address later can lose its own element to this DEL.
    const t0 = performance.now();
    await ctx.dataplane.remove(att.resources, { netns: att.netns });
    const t1 = performance.now();
    ctx.ledger.remove(att.key);
    const address = vpcAddressOf(att.resources);
    // Ownership: an address another record still holds is not this DEL's to free (two records of
    // one address are refused at load; here only a bug makes them). Convergence: a freed address
    // cools down before reuse; a commit makes it durable.
    if (address && ctx.ledger.addressInUse(address.ip)) {
      ctx.log.error('DEL kept an address another record holds', {
        key: req.key,
        ip: address.ip,
        holder: ctx.ledger.findByIp(address.ip)?.key,
      });
    } else if (address) ctx.addresses.release(address.ip, address.eniId);
    await ctx.ledger.commit();
    const t2 = performance.now();
    ctx.log.info('detached', {
      key: req.key,
      ip: address?.ip,
      hostVeth: attachmentHostVeth(att),
      // Where a DEL's time goes: the kernel work (mostly the veth's deletion) and the ledger write.
      ms: { kernel: roundMs(t1 - t0), ledger: roundMs(t2 - t1) },
    });
    return;
  }
  // A pod found by recovery of a lost ledger: its host veth is named after this key, and so is its
  // egress veth (an IPv6 pod's v4if0, an IPv4 pod's v6if0), recovered as a record of its own.
  const prefix = req.vethPrefix ?? ctx.vethPrefix;
  const named = [
    hostVethName(req.key, prefix),
    egressVethName(req.key, prefix),
    v6EgressVethName(req.key, prefix),
  ];
  const recovered = named.flatMap((veth) => {
    const r = recoveredByVeth(ctx.ledger, veth);
    return r === undefined ? [] : [r];
  });
  if (recovered.length > 0) {
    for (const r of recovered)
      await releaseRecovered(ctx, r, `DEL of ${req.key.containerId}/${req.key.ifName}`);
    await ctx.ledger.commit();
    return;
  }
  const fallback = fallbackResources(ctx, req);
  if (fallback.length > 0) {
    await ctx.dataplane.remove(fallback);
    ctx.log.info('DEL without ledger record: removed what only this attachment can own', {
      key: req.key,
      resources: fallback,
    });
  } else {
    ctx.log.debug('DEL of unknown attachment', { key: req.key });
  }
  // Durable before success: a retried DEL whose first attempt removed the record but failed to
  // write it must not answer success before the removal is on disk.
  await ctx.ledger.commit();
}

/**
 * No ledger record (e.g. the ledger was lost). The host veth name is derived from this attachment's
 * key, so only this attachment can own it. prevResult's addresses are only a hint: their rules and
 * SNAT entry are removed only when no live attachment in the ledger holds that address.
 */
function fallbackResources(ctx: DelContext, req: AttachRequest): Resource[] {
  const out: Resource[] = [
    {
      kind: 'veth',
      hostName: hostVethName(req.key, req.vethPrefix ?? ctx.vethPrefix),
      hostMac: hostVethMac(req.key),
      podIfName: req.key.ifName,
      mtu: req.mtu ?? ctx.defaultMtu,
    },
  ];
  // A pod's egress veth of the other family (an IPv6 pod's v4if0, an IPv4 pod's v6if0) is named
  // after the key too (absent on other pods: already gone).
  const prefix = req.vethPrefix ?? ctx.vethPrefix;
  out.push(
    {
      kind: 'veth',
      hostName: egressVethName(req.key, prefix),
      hostMac: egressVethMac(req.key),
      podIfName: V4_EGRESS_IF,
      mtu: req.mtu ?? ctx.defaultMtu,
    },
    {
      kind: 'veth',
      hostName: v6EgressVethName(req.key, prefix),
      hostMac: v6EgressVethMac(req.key),
      podIfName: V6_EGRESS_IF,
      mtu: req.mtu ?? ctx.defaultMtu,
    },
  );
  for (const ip of req.prevResultIps) {
    // An IPv6 pod has no rules or SNAT element: its routes went with its veths.
    if (!isIPv4(ip)) continue;
    if (ctx.ledger.addressInUse(ip)) continue;
    out.push(
      { kind: 'rule', priority: RULE_PRIORITY_TO_POD, to: `${ip}/32`, table: MAIN_TABLE },
      { kind: 'snat', ip },
    );
  }
  return out;
}

/**
 * The DEL of a recorded attachment that no runtime request names (a CNI GC, the dead-pod GC): what
 * it removes comes from the record alone. The caller holds the pod's line.
 */
export function delRecorded(ctx: DelContext, att: Attachment): Promise<void> {
  return delAttachment(ctx, {
    key: att.key,
    netns: undefined,
    pod: att.pod,
    mtu: undefined,
    vethPrefix: undefined,
    prevResultIps: [],
  });
}

function roundMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}
