// The node-local addresses of pods' egress interfaces, one range per family, as upstream's egress
// plugin uses them: 169.254.172.0/22 on v4if0 (IPv6 pods, ENABLE_V4_EGRESS) and fd00::ac:0/118 on
// v6if0 (IPv4 pods, ENABLE_V6_EGRESS). Never the range's first two offsets nor its last (the IPv4
// network, .1 and broadcast; the same offsets of the IPv6 range, for one rule in both).
// Which addresses pods hold is read from the ledger at every allocation (the records are the only
// truth, so a restart never hands out an address a pod holds); a cursor hands addresses out in
// turn, so a freed address is reused last (a stale conntrack entry of its old pod has timed out).
import { CNI_ERR_TRY_AGAIN_LATER, CniError } from '../cni/errors.ts';
import { formatIpv4, isIpv4, parseCidr, parseIpv4 } from '../infra/ipv4.ts';
import { formatIpv6, isIpv6, parseIpv6, parseIpv6Cidr } from '../infra/ipv6-cidr.ts';
import type { Attachment } from '../plan/attachment.ts';
import { V4_EGRESS_CIDR, V4_EGRESS_IF } from '../plan/ipv6-pod-plan.ts';
import type { RecoveredRecord } from '../plan/recovered.ts';
import { V6_EGRESS_CIDR, V6_EGRESS_IF } from '../plan/v6-egress-plan.ts';
import type { PooledAddress } from './address-source.ts';
import type { AddContext } from './context.ts';

/** One family's egress range: its pods' interface, and offsets ↔ addresses. */
export interface EgressRange {
  readonly family: 'IPv4' | 'IPv6';
  readonly cidr: string;
  /** The pod's egress interface, which the address is on. */
  readonly ifName: string;
  /** The setting that asks for it, for messages. */
  readonly setting: string;
  readonly size: number;
  at(offset: number): string;
  /** The offset of `ip` in the range, or undefined outside it (or another family). */
  offsetOf(ip: string): number | undefined;
}

const v4 = parseCidr(V4_EGRESS_CIDR);
export const V4_EGRESS_RANGE: EgressRange = {
  family: 'IPv4',
  cidr: V4_EGRESS_CIDR,
  ifName: V4_EGRESS_IF,
  setting: 'ENABLE_V4_EGRESS',
  size: v4.size,
  at: (offset) => formatIpv4(v4.network + offset),
  offsetOf: (ip) => {
    if (!isIpv4(ip)) return undefined;
    const offset = parseIpv4(ip) - v4.network;
    return offset >= 0 && offset < v4.size ? offset : undefined;
  },
};

const v6 = parseIpv6Cidr(V6_EGRESS_CIDR);
const V6_SIZE = 2 ** (128 - v6.prefixLength);
export const V6_EGRESS_RANGE: EgressRange = {
  family: 'IPv6',
  cidr: V6_EGRESS_CIDR,
  ifName: V6_EGRESS_IF,
  setting: 'ENABLE_V6_EGRESS',
  size: V6_SIZE,
  at: (offset) => formatIpv6(v6.base + BigInt(offset)),
  offsetOf: (ip) => {
    if (!isIpv6(ip)) return undefined;
    const offset = parseIpv6(ip) - v6.base;
    return offset >= 0n && offset < BigInt(V6_SIZE) ? Number(offset) : undefined;
  },
};

/** Offsets handed out: not the first two, nor the last. */
const FIRST = 2;
const lastOf = (range: EgressRange) => range.size - 2;

/** The pod-side address an attachment holds on `range`'s interface, if any. */
function egressAddressOf(att: Attachment, range: EgressRange): string | undefined {
  for (const r of att.resources) {
    if ((r.kind === 'ifAddress' || r.kind === 'ipv6Address') && r.side === 'pod' && r.dev === range.ifName)
      return r.cidr.split('/')[0];
  }
  return undefined;
}

/**
 * The addresses of `range` the given attachments hold (their egress interface's pod-side address),
 * and those of records recovered from the node after a lost ledger (an egress veth's host route is
 * evidence).
 */
export function heldEgressAddresses(
  range: EgressRange,
  attachments: Iterable<Attachment>,
  recovered: Iterable<RecoveredRecord> = [],
): Set<string> {
  const held = new Set<string>();
  for (const r of recovered) if (r.ip !== undefined && range.offsetOf(r.ip) !== undefined) held.add(r.ip);
  for (const att of attachments) {
    const ip = egressAddressOf(att, range);
    if (ip !== undefined) held.add(ip);
  }
  return held;
}

/** What ADD needs of the egress addresses (a test hands in a full range without filling one). */
export interface EgressAddressAllocator {
  readonly range: EgressRange;
  /** The next address no attachment holds, or undefined when every one is held. */
  allocate(held: ReadonlySet<string>): string | undefined;
}

export class EgressAddresses implements EgressAddressAllocator {
  readonly range: EgressRange;
  #cursor = FIRST;

  constructor(range: EgressRange) {
    this.range = range;
  }

  allocate(held: ReadonlySet<string>): string | undefined {
    const last = lastOf(this.range);
    const count = last - FIRST + 1;
    for (let i = 0; i < count; i++) {
      const offset = FIRST + ((this.#cursor - FIRST + i) % count);
      const ip = this.range.at(offset);
      if (held.has(ip)) continue;
      this.#cursor = offset + 1 > last ? FIRST : offset + 1;
      return ip;
    }
    return undefined;
  }

  /** How many addresses the range hands out in all. */
  get capacity(): number {
    return lastOf(this.range) - FIRST + 1;
  }
}

/**
 * The egress address of an ADD's plan, when `egress` is on and the attachment is the pod's primary
 * interface (egress is the pod's, not each interface's). Runs between taking the pod's address and
 * recording the plan, without awaiting, so two ADDs never choose one egress address. When every one
 * is held, the pod's address goes back and the ADD fails with code 11.
 */
export function egressAddressFor(
  ctx: Pick<AddContext, 'ledger' | 'addresses'>,
  egress: EgressAddressAllocator | undefined,
  primary: boolean,
  addr: PooledAddress,
): string | undefined {
  if (egress === undefined || !primary) return undefined;
  const ip = egress.allocate(heldEgressAddresses(egress.range, ctx.ledger.list(), ctx.ledger.recovered()));
  if (ip !== undefined) return ip;
  ctx.addresses.unreserve(addr.ip);
  const capacity = egress instanceof EgressAddresses ? `all ${egress.capacity}` : 'all';
  throw new CniError(
    CNI_ERR_TRY_AGAIN_LATER,
    `no free ${egress.range.family} egress address in ${egress.range.cidr} on this node`,
    `${capacity} are held by pods (${egress.range.setting})`,
  );
}
