// IPv6 addresses and CIDRs as 128-bit integers, and their canonical text (RFC 5952: lower case,
// leading zeros dropped, the longest run of two or more zero groups written as "::"). The
// IPv6 contract between pool and node compares addresses as strings, so every address the
// cloud side hands out passes through formatIpv6 once.
import { isIPv6 } from 'node:net';

export interface Ipv6Cidr {
  readonly base: bigint;
  readonly prefixLength: number;
}

const ALL_ONES = (1n << 128n) - 1n;

export function isIpv6(text: string): boolean {
  return isIPv6(text) && !text.includes('.') && !text.includes('%');
}

/** The address as an integer; throws on anything but plain colon-hex text. */
export function parseIpv6(text: string): bigint {
  if (!isIpv6(text)) throw new Error(`not an IPv6 address: ${JSON.stringify(text)}`);
  const [head = '', tail] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  let n = 0n;
  for (const g of [...left, ...zeros, ...right]) n = (n << 16n) | BigInt(Number.parseInt(g, 16));
  return n;
}

export function formatIpv6(n: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((n >> BigInt(i * 16)) & 0xffffn));
  // The longest run of zero groups (the first on a tie), if at least two long, becomes "::".
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

/** The canonical text of an address given in any valid form. */
export function canonicalIpv6(text: string): string {
  return formatIpv6(parseIpv6(text));
}

export function isIpv6Cidr(text: string): boolean {
  const [addr, len, extra] = text.split('/');
  if (addr === undefined || len === undefined || extra !== undefined || !/^\d{1,3}$/.test(len)) return false;
  return isIpv6(addr) && Number(len) <= 128;
}

/** The CIDR with host bits cleared. */
export function parseIpv6Cidr(text: string): Ipv6Cidr {
  if (!isIpv6Cidr(text)) throw new Error(`not an IPv6 CIDR: ${JSON.stringify(text)}`);
  const [addr = '', len = ''] = text.split('/');
  const prefixLength = Number(len);
  return { base: parseIpv6(addr) & prefixMask(prefixLength), prefixLength };
}

export function formatIpv6Cidr(c: Ipv6Cidr): string {
  return `${formatIpv6(c.base)}/${c.prefixLength}`;
}

export function ipv6CidrContains(c: Ipv6Cidr, address: bigint): boolean {
  return (address & prefixMask(c.prefixLength)) === c.base;
}

function prefixMask(prefixLength: number): bigint {
  return (ALL_ONES << BigInt(128 - prefixLength)) & ALL_ONES;
}
