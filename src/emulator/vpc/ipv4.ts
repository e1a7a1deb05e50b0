// IPv4 arithmetic for the emulated VPC: dotted quads as unsigned 32-bit numbers.

export interface Cidr {
  readonly network: number;
  readonly prefixLength: number;
  /** Number of addresses in the block (2^(32-prefix)). */
  readonly size: number;
}

export function parseIpv4(text: string): number {
  const parts = text.split('.');
  if (parts.length !== 4) throw new Error(`not an IPv4 address: ${text}`);
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) throw new Error(`not an IPv4 address: ${text}`);
    const octet = Number(part);
    if (octet > 255) throw new Error(`not an IPv4 address: ${text}`);
    value = value * 256 + octet;
  }
  return value;
}

export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

export function isIpv4(text: string): boolean {
  try {
    parseIpv4(text);
    return true;
  } catch {
    return false;
  }
}

export function parseCidr(text: string): Cidr {
  const [address, prefix] = text.split('/');
  const prefixLength = Number(prefix);
  if (address === undefined || !Number.isInteger(prefixLength) || prefixLength < 0 || prefixLength > 32) {
    throw new Error(`not an IPv4 CIDR: ${text}`);
  }
  const size = 2 ** (32 - prefixLength);
  const network = parseIpv4(address) - (parseIpv4(address) % size);
  return { network, prefixLength, size };
}

export function cidrContains(cidr: Cidr, address: number): boolean {
  return address >= cidr.network && address < cidr.network + cidr.size;
}

/** AWS reserves the network address, +1 (router), +2 (DNS), +3 (future) and the broadcast address. */
export function isAwsReserved(cidr: Cidr, address: number): boolean {
  const offset = address - cidr.network;
  return offset <= 3 || offset === cidr.size - 1;
}

/** The subnet's router: first address + 1. */
export function gatewayOf(cidr: Cidr): string {
  return formatIpv4(cidr.network + 1);
}
