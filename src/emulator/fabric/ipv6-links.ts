// IPv6 on the fabric's ENI links (dual-stack subnets). The VPC side of each link carries the
// subnet router <subnet /64>::1 as a /128 (the same address on every link of the subnet, as the
// IPv4 gateway is); each IPv6 address of the ENI is routed to its link with a permanent neighbour
// entry (the VPC delivers to the ENI's MAC without neighbour discovery), and each delegated /80
// via the ENI's primary IPv6. Device 0 gets its primary IPv6 and a default route via the router,
// as the instance's OS would from DHCPv6. Addresses skip DAD: the fabric alone hands them out.

import { parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import type { FabricEni } from '../api.ts';
import { ipv6Router } from '../vpc/eni-ipv6.ts';

export function ipv6AttachLines(
  eni: FabricEni,
  vpcSide: string,
  nodeSide: string,
  deviceIndex: number,
): { vpc: string[]; node: string[] } {
  if (eni.subnetIpv6Cidr === undefined) return { vpc: [], node: [] };
  const router = ipv6Router(parseIpv6Cidr(eni.subnetIpv6Cidr));
  const vpc = [`addr replace ${router}/128 dev ${vpcSide} nodad`];
  if (eni.primaryIpv6 !== undefined) vpc.push(...ipv6RouteLines(vpcSide, eni, [`${eni.primaryIpv6}/128`]));
  const node =
    deviceIndex === 0 && eni.primaryIpv6 !== undefined
      ? [
          `addr add ${eni.primaryIpv6}/128 dev ${nodeSide} nodad`,
          `route replace ${router}/128 dev ${nodeSide}`,
          `route replace ::/0 via ${router} dev ${nodeSide}`,
        ]
      : [];
  return { vpc, node };
}

/** A /128 goes to the link and resolves to the ENI's MAC; a /80 goes via the ENI's primary IPv6. */
export function ipv6RouteLines(vpcSide: string, eni: FabricEni, cidrs: readonly string[]): string[] {
  return cidrs.flatMap((cidr) => {
    const [address = '', length] = cidr.split('/');
    if (length === '128') {
      return [
        `route replace ${cidr} dev ${vpcSide}`,
        `neigh replace ${address} lladdr ${eni.mac} dev ${vpcSide} nud permanent`,
      ];
    }
    // Without a primary IPv6 the VPC would have to ask the ENI for each address of the /80.
    if (eni.primaryIpv6 === undefined) return [`route replace ${cidr} dev ${vpcSide}`];
    return [`route replace ${cidr} via ${eni.primaryIpv6} dev ${vpcSide} onlink`];
  });
}

export function ipv6RouteRemovals(vpcSide: string, cidrs: readonly string[]): string[] {
  return cidrs.flatMap((cidr) => {
    const [address = '', length] = cidr.split('/');
    const route = `route del ${cidr} dev ${vpcSide}`;
    return length === '128' ? [route, `neigh del ${address} dev ${vpcSide}`] : [route];
  });
}
