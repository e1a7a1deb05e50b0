// The IPv6 facts of the node's primary ENI from IMDS: its IPv6 addresses (the first is the
// node's primary IPv6), the subnet's and the VPC's IPv6 CIDR blocks. IMDS answers 404 for these
// paths on an ENI without IPv6: that is "no IPv6", not an error.
import { canonicalIpv6, formatIpv6Cidr, isIpv6, isIpv6Cidr, parseIpv6Cidr } from '../infra/ipv6-cidr.ts';
import type { InstanceMetadata } from './cloud.ts';
import { type ImdsClient, ImdsError } from './imds.ts';

type Ipv6Facts = Pick<InstanceMetadata, 'primaryIpv6' | 'subnetIpv6Cidrs' | 'vpcIpv6Cidrs'>;

export async function readIpv6Facts(imds: ImdsClient, eniPath: string): Promise<Ipv6Facts> {
  const [addresses, subnetCidrs, vpcCidrs] = await Promise.all([
    imds.getLinesOrNone(`${eniPath}/ipv6s`),
    imds.getLinesOrNone(`${eniPath}/subnet-ipv6-cidr-blocks`),
    imds.getLinesOrNone(`${eniPath}/vpc-ipv6-cidr-blocks`),
  ]);
  const primaryIpv6 = addresses[0];
  if (primaryIpv6 !== undefined && !isIpv6(primaryIpv6)) {
    throw new ImdsError(
      `IMDS ${eniPath}/ipv6s is not a list of IPv6 addresses: ${JSON.stringify(addresses.join('\n'))}`,
      `${eniPath}/ipv6s`,
      200,
      false,
    );
  }
  return {
    ...(primaryIpv6 === undefined ? {} : { primaryIpv6: canonicalIpv6(primaryIpv6) }),
    ...cidrs('subnetIpv6Cidrs', `${eniPath}/subnet-ipv6-cidr-blocks`, subnetCidrs),
    ...cidrs('vpcIpv6Cidrs', `${eniPath}/vpc-ipv6-cidr-blocks`, vpcCidrs),
  };
}

function cidrs<K extends string>(key: K, path: string, lines: readonly string[]): { [k in K]?: string[] } {
  if (lines.length === 0) return {};
  if (!lines.every(isIpv6Cidr)) {
    throw new ImdsError(
      `IMDS ${path} is not a list of IPv6 CIDRs: ${JSON.stringify(lines.join('\n'))}`,
      path,
      200,
      false,
    );
  }
  return { [key]: lines.map((l) => formatIpv6Cidr(parseIpv6Cidr(l))) } as { [k in K]?: string[] };
}
