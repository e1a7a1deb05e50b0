// The IPv6 sets of EC2's NetworkInterface (ipv6AddressesSet, ipv6PrefixSet), checked and written
// in canonical text; each set is left out of EniInfo when the ENI has none, as ipv4Prefixes is.
import { canonicalIpv6, formatIpv6Cidr, isIpv6, isIpv6Cidr, parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import type { EniInfo } from '../cloud.ts';
import { invalidResponse } from '../ec2-errors.ts';

interface Ec2Ipv6Sets {
  readonly ipv6Addresses: readonly { readonly ipv6Address?: string }[];
  readonly ipv6Prefixes: readonly { readonly ipv6Prefix?: string }[];
}

export function readEniIpv6(
  doing: string,
  eniId: string,
  eni: Ec2Ipv6Sets,
): Pick<EniInfo, 'ipv6Addresses' | 'ipv6Prefixes'> {
  const bad = (what: string, value: string | undefined) =>
    invalidResponse(doing, `${what} of ${eniId} (got ${JSON.stringify(value)})`);
  const ipv6Addresses = eni.ipv6Addresses.map(({ ipv6Address: a }) => {
    if (a === undefined || !isIpv6(a)) throw bad('an IPv6 address in Ipv6Addresses[].Ipv6Address', a);
    return canonicalIpv6(a);
  });
  const ipv6Prefixes = eni.ipv6Prefixes.map(({ ipv6Prefix: p }) => {
    if (p === undefined || !isIpv6Cidr(p)) throw bad('an IPv6 CIDR in Ipv6Prefixes[].Ipv6Prefix', p);
    return formatIpv6Cidr(parseIpv6Cidr(p));
  });
  return {
    ...(ipv6Addresses.length === 0 ? {} : { ipv6Addresses }),
    ...(ipv6Prefixes.length === 0 ? {} : { ipv6Prefixes }),
  };
}
