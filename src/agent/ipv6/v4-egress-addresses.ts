// The node-local IPv4 addresses of IPv6 pods' egress interfaces (v4if0, ENABLE_V4_EGRESS), out of
// 169.254.172.0/22 as upstream's egress plugin uses it. Never .0, .1 or the broadcast address.
// Which addresses pods hold is read from the ledger at every allocation (the records are the only
// truth, so a restart never hands out an address a pod holds); a cursor hands addresses out in
// turn, so a freed address is reused last (a stale conntrack entry of its old pod has timed out).
import { isIPv4 } from 'node:net';
import { formatIpv4, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import type { Attachment } from '../../plan/attachment.ts';
import { V4_EGRESS_CIDR, V4_EGRESS_IF } from '../../plan/ipv6-pod-plan.ts';
import type { RecoveredRecord } from '../../plan/recovered.ts';

const RANGE = parseCidr(V4_EGRESS_CIDR);
const BASE = RANGE.network;
/** Offsets inside the range that are handed out: not the network (.0), .1, nor the broadcast. */
const FIRST = 2;
const LAST = RANGE.size - 2;

/**
 * The egress addresses the given attachments hold (their v4if0's pod-side address), and those of
 * records recovered from the node after a lost ledger (an egress veth's host route is evidence).
 */
export function heldEgressAddresses(
  attachments: Iterable<Attachment>,
  recovered: Iterable<RecoveredRecord> = [],
): Set<string> {
  const held = new Set<string>();
  for (const r of recovered) if (r.ip !== undefined && inEgressRange(r.ip)) held.add(r.ip);
  for (const att of attachments) {
    for (const r of att.resources) {
      if (r.kind === 'ifAddress' && r.side === 'pod' && r.dev === V4_EGRESS_IF) {
        held.add(r.cidr.split('/')[0] ?? '');
      }
    }
  }
  return held;
}

/** What ADD needs of the egress addresses (a test hands in a full range without filling one). */
export interface EgressAddressAllocator {
  /** The next address no attachment holds, or undefined when every one is held. */
  allocate(held: ReadonlySet<string>): string | undefined;
}

function inEgressRange(ip: string): boolean {
  if (!isIPv4(ip)) return false;
  const offset = parseIpv4(ip) - BASE;
  return offset >= 0 && offset < RANGE.size;
}

export class V4EgressAddresses implements EgressAddressAllocator {
  #cursor = FIRST;

  allocate(held: ReadonlySet<string>): string | undefined {
    const count = LAST - FIRST + 1;
    for (let i = 0; i < count; i++) {
      const offset = FIRST + ((this.#cursor - FIRST + i) % count);
      const ip = formatIpv4(BASE + offset);
      if (held.has(ip)) continue;
      this.#cursor = offset + 1 > LAST ? FIRST : offset + 1;
      return ip;
    }
    return undefined;
  }

  /** How many addresses the range hands out in all. */
  static get capacity(): number {
    return LAST - FIRST + 1;
  }
}
