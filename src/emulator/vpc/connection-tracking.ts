// An ENI's connection-tracking timeouts as EC2 keeps them: set by CreateNetworkInterface's
// ConnectionTrackingSpecification (or, for a primary ENI, the instance's launch), checked against
// EC2's documented bounds, and shown by DescribeNetworkInterfaces as connectionTrackingConfiguration
// (only the timeouts that were set; none at all when none was).
import { invalidParameter } from '../ec2/error.ts';

/** Seconds; a timeout left out is EC2's default for it. */
export interface ConnectionTrackingTimeouts {
  readonly tcpEstablishedTimeout?: number;
  readonly udpStreamTimeout?: number;
  readonly udpTimeout?: number;
}

/** EC2's bounds per timeout (EC2 User Guide, "Connection tracking timeouts"), with its wire name. */
const BOUNDS = {
  tcpEstablishedTimeout: { wire: 'TcpEstablishedTimeout', min: 60, max: 432_000 },
  udpStreamTimeout: { wire: 'UdpStreamTimeout', min: 60, max: 180 },
  udpTimeout: { wire: 'UdpTimeout', min: 30, max: 60 },
} as const;

type TimeoutName = keyof typeof BOUNDS;

/**
 * The timeouts a request gives (`read` answers the integer of a wire name, or undefined), each
 * checked against its bounds; undefined when it gives none.
 */
export function connectionTrackingOf(
  prefix: string,
  read: (name: string) => number | undefined,
): ConnectionTrackingTimeouts | undefined {
  const out: Partial<Record<TimeoutName, number>> = {};
  for (const [name, bound] of Object.entries(BOUNDS) as [TimeoutName, (typeof BOUNDS)[TimeoutName]][]) {
    const value = read(`${prefix}.${bound.wire}`);
    if (value === undefined) continue;
    if (value < bound.min || value > bound.max) {
      throw invalidParameter(
        `Invalid value '${value}' for ${prefix}.${bound.wire}: it must be between ${bound.min} and ${bound.max} seconds`,
      );
    }
    out[name] = value;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

/** What DescribeNetworkInterfaces shows: the timeouts that were set, or no element at all. */
export function renderConnectionTracking(t: ConnectionTrackingTimeouts | undefined) {
  return t === undefined ? undefined : { ...t };
}
