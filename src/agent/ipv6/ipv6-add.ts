// The plan of an IPv6 pod for an ADD (ENABLE_IPv6): the address the source gave, and with IPv4
// egress (ENABLE_V4_EGRESS) a node-local IPv4 address for the pod's v4if0. Runs between taking the
// address and recording the plan, without awaiting, so two ADDs never choose one egress address.
import { CNI_ERR_TRY_AGAIN_LATER, CniError } from '../../cni/errors.ts';
import { planIpv6Pod, V4_EGRESS_CIDR } from '../../plan/ipv6-pod-plan.ts';
import { PRIMARY_POD_IF } from '../../plan/pod-plan.ts';
import type { Resource } from '../../plan/resource.ts';
import type { PooledAddress } from '../address-source.ts';
import type { AddContext, AttachRequest } from '../context.ts';
import { heldEgressAddresses, V4EgressAddresses } from './v4-egress-addresses.ts';

export function ipv6Plan(ctx: AddContext, req: AttachRequest, addr: PooledAddress): Resource[] {
  // IPv4 egress is the pod's, not each interface's: it goes with the pod's primary interface.
  const egress = req.key.ifName === PRIMARY_POD_IF ? ctx.v4Egress : undefined;
  const v4EgressIp = egress?.allocate(heldEgressAddresses(ctx.ledger.list(), ctx.ledger.recovered()));
  if (egress !== undefined && v4EgressIp === undefined) {
    ctx.addresses.unreserve(addr.ip);
    throw new CniError(
      CNI_ERR_TRY_AGAIN_LATER,
      `no free IPv4 egress address in ${V4_EGRESS_CIDR} on this node`,
      `all ${V4EgressAddresses.capacity} are held by IPv6 pods (ENABLE_V4_EGRESS)`,
    );
  }
  return planIpv6Pod({
    key: req.key,
    vethPrefix: req.vethPrefix ?? ctx.vethPrefix,
    ip: addr.ip,
    eniId: addr.eniId,
    mtu: req.mtu ?? ctx.defaultMtu,
    ...(v4EgressIp === undefined ? {} : { v4EgressIp }),
  });
}
