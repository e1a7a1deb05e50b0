// The plan of an IPv6 pod for an ADD (ENABLE_IPv6): the address the source gave, and with IPv4
// egress (ENABLE_V4_EGRESS) a node-local IPv4 address for the pod's v4if0. Runs between taking the
// address and recording the plan, without awaiting, so two ADDs never choose one egress address.
import { planIpv6Pod } from '../../plan/ipv6-pod-plan.ts';
import { PRIMARY_POD_IF } from '../../plan/pod-plan.ts';
import type { Resource } from '../../plan/resource.ts';
import type { PooledAddress } from '../address-source.ts';
import type { AddContext, AttachRequest } from '../context.ts';
import { egressAddressFor } from '../egress-addresses.ts';

export function ipv6Plan(ctx: AddContext, req: AttachRequest, addr: PooledAddress): Resource[] {
  const v4EgressIp = egressAddressFor(ctx, ctx.v4Egress, req.key.ifName === PRIMARY_POD_IF, addr);
  return planIpv6Pod({
    key: req.key,
    vethPrefix: req.vethPrefix ?? ctx.vethPrefix,
    ip: addr.ip,
    eniId: addr.eniId,
    mtu: req.mtu ?? ctx.defaultMtu,
    ...(v4EgressIp === undefined ? {} : { v4EgressIp }),
  });
}
