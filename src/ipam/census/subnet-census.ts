// A census of one subnet: which of its addresses are held (AWS's five, every address and /28 its
// ENIs hold, whoever's they are) and which ranges are reserved (subnet CIDR reservations), so that
// the free aligned /28s are known exactly. EC2 shows neither figure: DescribeSubnets counts free
// addresses, and a subnet with thousands of them can have no /28 left (InsufficientCidrBlocks).
// Pure: taking one is census-reading.ts; sharing it with the cluster is the agent's.
import {
  cidrContains,
  formatIpv4,
  type Ipv4Cidr,
  isAwsReserved,
  parseCidr,
  parseIpv4,
} from '../../infra/ipv4.ts';

/** Addresses of a delegated IPv4 prefix. */
const BLOCK = 16;

export interface CensusReservation {
  readonly cidr: string;
  readonly type: 'prefix' | 'explicit';
}

export interface SubnetCensus {
  readonly subnetId: string;
  readonly cidr: string;
  /** When EC2 was read (ms since epoch). */
  readonly takenAt: number;
  /** One bit per address of the subnet, set when it is held (AWS's own included), lowest first. */
  readonly held: Uint8Array;
  readonly reservations: readonly CensusReservation[];
  /**
   * False when the reservations could not be read (the agent's role may lack
   * ec2:GetSubnetCidrReservations): the counts then take no reservation into account, and no /32 is
   * named from it (one could be someone's reserved address).
   */
  readonly reservationsKnown: boolean;
}

/** What the census says, as figures (metrics, `vpcnetctl status`, placement). */
export interface CensusFigures {
  /** Aligned /28s a prefix-delegating node can still get here. */
  readonly freePrefixes: number;
  /** Addresses a pod here can still be given (outside `explicit` reservations). */
  readonly freeAddresses: number;
}

/** The census of `cidr` from what its ENIs hold and its reservations. */
export function censusOf(input: {
  readonly subnetId: string;
  readonly cidr: string;
  readonly takenAt: number;
  readonly addresses: readonly string[];
  readonly prefixes: readonly string[];
  readonly reservations: readonly CensusReservation[] | undefined;
}): SubnetCensus {
  const subnet = parseCidr(input.cidr);
  const held = new Uint8Array(Math.ceil(subnet.size / 8));
  const hold = (a: number) => {
    if (!cidrContains(subnet, a)) return;
    const i = a - subnet.network;
    held[i >> 3]! |= 1 << (i & 7);
  };
  for (let a = subnet.network; a < subnet.network + subnet.size; a++) if (isAwsReserved(subnet, a)) hold(a);
  for (const ip of input.addresses) hold(parseIpv4(ip));
  for (const p of input.prefixes) {
    const block = parseCidr(p);
    for (let a = block.network; a < block.network + block.size; a++) hold(a);
  }
  return {
    subnetId: input.subnetId,
    cidr: input.cidr,
    takenAt: input.takenAt,
    held,
    reservations: input.reservations ?? [],
    reservationsKnown: input.reservations !== undefined,
  };
}

/** A census read back, with its subnet parsed once. */
export class CensusView {
  readonly census: SubnetCensus;
  readonly #subnet: Ipv4Cidr;
  readonly #reserved: readonly { readonly block: Ipv4Cidr; readonly type: 'prefix' | 'explicit' }[];

  constructor(census: SubnetCensus) {
    this.census = census;
    this.#subnet = parseCidr(census.cidr);
    this.#reserved = census.reservations.map((r) => ({ block: parseCidr(r.cidr), type: r.type }));
  }

  isHeld(a: number): boolean {
    const i = a - this.#subnet.network;
    return ((this.census.held[i >> 3] ?? 0) & (1 << (i & 7))) !== 0;
  }

  #reservationOf(a: number): 'prefix' | 'explicit' | undefined {
    return this.#reserved.find((r) => cidrContains(r.block, a))?.type;
  }

  /** The aligned /28s nothing holds and no `explicit` reservation covers, lowest first. */
  freePrefixBlocks(): string[] {
    const out: string[] = [];
    for (const block of this.#blocks()) if (this.#blockFree(block)) out.push(`${formatIpv4(block)}/28`);
    return out;
  }

  /** Computed once: a census never changes. */
  #figures: CensusFigures | undefined;

  figures(): CensusFigures {
    this.#figures ??= this.#count();
    return this.#figures;
  }

  #count(): CensusFigures {
    let freePrefixes = 0;
    for (const block of this.#blocks()) if (this.#blockFree(block)) freePrefixes++;
    let freeAddresses = 0;
    for (let a = this.#subnet.network; a < this.#subnet.network + this.#subnet.size; a++) {
      if (!this.isHeld(a) && this.#reservationOf(a) !== 'explicit') freeAddresses++;
    }
    return { freePrefixes, freeAddresses };
  }

  /**
   * Free addresses to name for a pod's ENI, in the order that breaks the fewest whole /28s: those
   * of blocks already broken first, then whole blocks one at a time, so a run of /32s breaks one
   * block rather than many. Never an address of a reservation. Within each group blocks go in the
   * order `rank` gives them (lowest first): a node ranks blocks by a hash of its own, so nodes
   * reading one census (it may be minutes old) each fill different blocks instead of all naming the
   * same addresses. None when the reservations are unknown: a named address could be someone's
   * reserved one.
   */
  namedAddressOrder(skip: (ip: string) => boolean, rank: (block: number) => number): string[] {
    if (!this.census.reservationsKnown) return [];
    const blocks: { free: number[]; whole: boolean; key: number }[] = [];
    for (const block of this.#blocks()) {
      const free: number[] = [];
      for (let a = block; a < block + BLOCK; a++) {
        if (!this.isHeld(a) && this.#reservationOf(a) === undefined && !skip(formatIpv4(a))) free.push(a);
      }
      if (free.length > 0) blocks.push({ free, whole: this.#blockFree(block), key: rank(block) });
    }
    blocks.sort((x, y) => Number(x.whole) - Number(y.whole) || x.key - y.key);
    return blocks.flatMap((b) => b.free.map(formatIpv4));
  }

  *#blocks(): Generator<number> {
    const first = this.#subnet.network;
    for (let b = first; b + BLOCK <= first + this.#subnet.size; b += BLOCK) yield b;
  }

  #blockFree(block: number): boolean {
    for (let a = block; a < block + BLOCK; a++) {
      if (this.isHeld(a) || this.#reservationOf(a) === 'explicit') return false;
    }
    return true;
  }
}
