// IPv6 on ENIs: single addresses (Ipv6AddressCount / Ipv6Addresses.N) and delegated /80 prefixes
// (Ipv6PrefixCount / Ipv6Prefix.N) out of the subnet's /64. The first /80 of the /64 holds the
// single addresses (the router's ::1, primary IPv6s), so a delegated /80 never overlaps one;
// prefixes are handed out from the second /80 on, aligned, never two ENIs the same one. Which
// addresses are taken is read from the ENIs themselves, so snapshots need no extra state.
import {
  formatIpv6,
  formatIpv6Cidr,
  type Ipv6Cidr,
  ipv6CidrContains,
  isIpv6,
  isIpv6Cidr,
  parseIpv6,
  parseIpv6Cidr,
} from '../../infra/ipv6-cidr.ts';
import type { SubnetSpec } from '../api.ts';
import { Ec2Error, invalidParameter } from '../ec2/error.ts';
import type { Eni, VpcView } from './view.ts';

export type Ipv6AssignRequest =
  | { readonly addressCount: number }
  | { readonly addresses: readonly string[] }
  | { readonly prefixCount: number }
  | { readonly prefixes: readonly string[] };

export interface Ipv6Assigned {
  readonly addresses: string[];
  readonly prefixes: string[];
}

export const IPV6_PREFIX_LENGTH = 80;
const PREFIX_BITS = 128n - BigInt(IPV6_PREFIX_LENGTH);
const PREFIXES_PER_SUBNET = 1n << 16n;
/** Offsets below this in the first /80 are kept back (the router's ::1 among them). */
const FIRST_SINGLE_OFFSET = 0x10n;

/** A dual-stack subnet's /64 must lie inside the VPC's IPv6 block (CreateSubnet's check). */
export function checkSubnetIpv6(s: SubnetSpec, vpcIpv6Cidr: string | undefined): void {
  if (s.ipv6Cidr === undefined) return;
  if (vpcIpv6Cidr === undefined || !isIpv6Cidr(s.ipv6Cidr)) {
    throw new Error(`subnet ${s.subnetId}: IPv6 CIDR ${s.ipv6Cidr} needs a VPC with an IPv6 CIDR block`);
  }
  const c = parseIpv6Cidr(s.ipv6Cidr);
  const vpc = parseIpv6Cidr(vpcIpv6Cidr);
  if (c.prefixLength !== 64 || vpc.prefixLength > 64 || !ipv6CidrContains(vpc, c.base)) {
    throw new Error(`subnet ${s.subnetId}: IPv6 CIDR ${s.ipv6Cidr} must be a /64 inside ${vpcIpv6Cidr}`);
  }
}

/** The ENI's subnet /64; EC2 refuses IPv6 on a subnet without one. */
export function subnetIpv6Cidr(view: VpcView, eni: Eni): Ipv6Cidr {
  const text = view.subnet(eni.subnetId).spec.ipv6Cidr;
  if (text === undefined) {
    throw invalidParameter(
      `The subnet ${eni.subnetId} of network interface ${eni.eniId} has no IPv6 CIDR block associated`,
    );
  }
  return parseIpv6Cidr(text);
}

/** The VPC router's IPv6 address on a /64: <subnet>::1. */
export function ipv6Router(subnet: Ipv6Cidr): string {
  return formatIpv6(subnet.base + 1n);
}

/** Assigns what `req` asks for to the ENI; all or nothing. */
export function takeIpv6(view: VpcView, eni: Eni, req: Ipv6AssignRequest): Ipv6Assigned {
  const subnet = subnetIpv6Cidr(view, eni);
  const taken = takenIn(view, eni.subnetId);
  if ('addressCount' in req || 'prefixCount' in req) {
    const count = 'addressCount' in req ? req.addressCount : req.prefixCount;
    const name = 'addressCount' in req ? 'ipv6AddressCount' : 'ipv6PrefixCount';
    if (!Number.isInteger(count) || count < 1) throw invalidParameter(`Invalid value '${count}' for ${name}`);
  }
  if ('addressCount' in req) {
    const addresses = freeSingles(subnet, taken, req.addressCount).map(formatIpv6);
    eni.ipv6Addresses.push(...addresses);
    return { addresses, prefixes: [] };
  }
  if ('addresses' in req) {
    const addresses = req.addresses.map((a) => claimSingle(subnet, taken, a));
    eni.ipv6Addresses.push(...addresses);
    return { addresses, prefixes: [] };
  }
  const prefixes =
    'prefixCount' in req
      ? freePrefixes(subnet, taken, req.prefixCount)
      : req.prefixes.map((p) => claimPrefix(subnet, taken, p));
  eni.ipv6Prefixes.push(...prefixes);
  return { addresses: [], prefixes };
}

/** UnassignIpv6Addresses: each address and prefix must be the ENI's; all or nothing. */
export function giveIpv6Back(
  eni: Eni,
  gone: { addresses: readonly string[]; prefixes: readonly string[] },
): void {
  const addresses = gone.addresses.map((a) => (isIpv6(a) ? formatIpv6(parseIpv6(a)) : a));
  const prefixes = gone.prefixes.map((p) => (isIpv6Cidr(p) ? formatIpv6Cidr(parseIpv6Cidr(p)) : p));
  if (addresses.some((a) => !eni.ipv6Addresses.includes(a))) {
    throw invalidParameter(`Some of the specified IPv6 addresses are not assigned to interface ${eni.eniId}`);
  }
  if (prefixes.some((p) => !eni.ipv6Prefixes.includes(p))) {
    throw invalidParameter(`Some of the specified IPv6 prefixes are not assigned to interface ${eni.eniId}`);
  }
  remove(eni.ipv6Addresses, addresses);
  remove(eni.ipv6Prefixes, prefixes);
}

interface Taken {
  readonly singles: Set<bigint>;
  /** Index of each delegated /80 inside the /64. */
  readonly prefixes: Set<bigint>;
}

function takenIn(view: VpcView, subnetId: string): Taken {
  const singles = new Set<bigint>();
  const prefixes = new Set<bigint>();
  for (const e of view.enis()) {
    if (e.subnetId !== subnetId) continue;
    for (const a of e.ipv6Addresses) singles.add(parseIpv6(a));
    for (const p of e.ipv6Prefixes) prefixes.add(prefixIndex(parseIpv6Cidr(p).base));
  }
  return { singles, prefixes };
}

function prefixIndex(address: bigint): bigint {
  return (address >> PREFIX_BITS) & (PREFIXES_PER_SUBNET - 1n);
}

function freeSingles(subnet: Ipv6Cidr, taken: Taken, count: number): bigint[] {
  const out: bigint[] = [];
  for (let offset = FIRST_SINGLE_OFFSET; out.length < count && offset < 1n << PREFIX_BITS; offset++) {
    const a = subnet.base + offset;
    if (!taken.singles.has(a)) out.push(a);
  }
  if (out.length < count) throw insufficient('addresses');
  return out;
}

function freePrefixes(subnet: Ipv6Cidr, taken: Taken, count: number): string[] {
  const out: string[] = [];
  for (let i = 1n; out.length < count && i < PREFIXES_PER_SUBNET; i++) {
    if (!taken.prefixes.has(i))
      out.push(formatIpv6Cidr({ base: subnet.base + (i << PREFIX_BITS), prefixLength: 80 }));
  }
  if (out.length < count) throw insufficient('/80 prefixes');
  return out;
}

function claimSingle(subnet: Ipv6Cidr, taken: Taken, text: string): string {
  if (!isIpv6(text)) throw invalidParameter(`Invalid IPv6 address: ${text}`);
  const a = parseIpv6(text);
  if (!ipv6CidrContains(subnet, a)) {
    throw invalidParameter(
      `Address ${text} is not in the subnet's IPv6 CIDR block ${formatIpv6Cidr(subnet)}`,
    );
  }
  if (taken.singles.has(a) || taken.prefixes.has(prefixIndex(a)) || a - subnet.base < FIRST_SINGLE_OFFSET) {
    throw new Ec2Error('InvalidParameterValue', `Address ${text} is already in use`);
  }
  taken.singles.add(a);
  return formatIpv6(a);
}

function claimPrefix(subnet: Ipv6Cidr, taken: Taken, text: string): string {
  const c = isIpv6Cidr(text) ? parseIpv6Cidr(text) : undefined;
  if (c === undefined || c.prefixLength !== IPV6_PREFIX_LENGTH || !ipv6CidrContains(subnet, c.base)) {
    throw invalidParameter(`Invalid IPv6 prefix ${text}: a /80 inside ${formatIpv6Cidr(subnet)} is needed`);
  }
  const i = prefixIndex(c.base);
  if (i === 0n || taken.prefixes.has(i)) throw invalidParameter(`IPv6 prefix ${text} is already in use`);
  taken.prefixes.add(i);
  return formatIpv6Cidr(c);
}

function insufficient(what: string): Ec2Error {
  return new Ec2Error('InsufficientCidrBlocks', `There are not enough free IPv6 ${what} in the subnet`);
}

function remove(list: string[], gone: readonly string[]): void {
  const set = new Set(gone);
  list.splice(0, list.length, ...list.filter((x) => !set.has(x)));
}
