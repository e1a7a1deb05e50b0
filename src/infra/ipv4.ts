// IPv4 for the whole project: addresses as unsigned 32-bit numbers, CIDR blocks, and what AWS
// reserves in a subnet. Parsing is strict (four decimal octets without leading zeros, as node:net's
// isIPv4; a prefix length of 0–32 written as plain digits), so every module agrees on what an
// address is and a typo never reads as some other address.

export interface Ipv4Cidr {
  /** The first address of the block (host bits of the text are cleared). */
  readonly network: number;
  readonly prefixLength: number;
  /** Number of addresses in the block (2^(32-prefixLength)). */
  readonly size: number;
}

const OCTET = /^(?:0|[1-9]\d{0,2})$/;
const PREFIX_LENGTH = /^(?:0|[1-9]\d?)$/;

function tryParseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

function tryParseCidr(text: string): Ipv4Cidr | undefined {
  const parts = text.split('/');
  if (parts.length !== 2) return undefined;
  const [addressText = '', lengthText = ''] = parts;
  const address = tryParseIpv4(addressText);
  if (address === undefined || !PREFIX_LENGTH.test(lengthText)) return undefined;
  const prefixLength = Number(lengthText);
  if (prefixLength > 32) return undefined;
  const size = 2 ** (32 - prefixLength);
  return { network: address - (address % size), prefixLength, size };
}

export function parseIpv4(text: string): number {
  const value = tryParseIpv4(text);
  if (value === undefined) throw new Error(`not an IPv4 address: ${JSON.stringify(text)}`);
  return value;
}

export function isIpv4(text: string): boolean {
  return tryParseIpv4(text) !== undefined;
}

export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

/** Parses `a.b.c.d/n`; an address with host bits set names its block (10.0.1.7/24 → 10.0.1.0/24). */
export function parseCidr(text: string): Ipv4Cidr {
  const cidr = tryParseCidr(text);
  if (cidr === undefined) throw new Error(`not an IPv4 CIDR: ${JSON.stringify(text)}`);
  return cidr;
}

export function isCidr(text: string): boolean {
  return tryParseCidr(text) !== undefined;
}

export function formatCidr(cidr: Ipv4Cidr): string {
  return `${formatIpv4(cidr.network)}/${cidr.prefixLength}`;
}

export function cidrContains(cidr: Ipv4Cidr, address: number): boolean {
  return address >= cidr.network && address < cidr.network + cidr.size;
}

/** True when every address of `inner` is in `outer`. */
export function cidrWithin(inner: Ipv4Cidr, outer: Ipv4Cidr): boolean {
  return cidrContains(outer, inner.network) && cidrContains(outer, inner.network + inner.size - 1);
}

/** True when the blocks share an address (CIDR blocks either nest or are disjoint). */
export function cidrsOverlap(a: Ipv4Cidr, b: Ipv4Cidr): boolean {
  return cidrContains(a, b.network) || cidrContains(b, a.network);
}

/** The subnet's router (the VPC's gateway for it): the first address + 1. */
export function routerAddress(cidr: Ipv4Cidr): number {
  return cidr.network + 1;
}

/** Addresses AWS keeps in every subnet: network, router (+1), DNS (+2), future use (+3), broadcast. */
export const AWS_RESERVED_PER_SUBNET = 5;

export function isAwsReserved(cidr: Ipv4Cidr, address: number): boolean {
  const offset = address - cidr.network;
  return offset <= 3 || offset === cidr.size - 1;
}

/** The router of a subnet given as text (10.0.1.1 for 10.0.1.0/24); a subnet needs room for one: /30 at most. */
export function subnetGateway(subnetCidr: string): string {
  const cidr = tryParseCidr(subnetCidr);
  if (cidr === undefined || cidr.prefixLength > 30) {
    throw new Error(`invalid subnet CIDR ${JSON.stringify(subnetCidr)} (expected a.b.c.d/n with n ≤ 30)`);
  }
  return formatIpv4(routerAddress(cidr));
}
