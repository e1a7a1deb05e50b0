// The one /80 an IPv6 node's pods draw from, on the primary ENI (as upstream's ipamd in IPv6
// mode: one AssignIpv6Addresses with Ipv6PrefixCount=1, no further ENIs). At start the /80 the
// ENI already holds is adopted; only when it holds none is one assigned. AssignIpv6Addresses is
// not idempotent, so a failed call (a lost reply among them) is followed by a describe: a /80
// that call left on the ENI is adopted instead of asking for a second.
import type { Cloud, EniInfo } from '../../cloud/cloud.ts';
import { errorText } from '../../infra/error-text.ts';
import { ipv6CidrContains, isIpv6, parseIpv6, parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import type { PoolLog } from '../pool/pool-parts.ts';

export interface Ipv6PrefixClaimDeps {
  readonly cloud: Pick<Cloud, 'describeInstanceEnis' | 'assignIpv6Prefixes' | 'unassignIpv6Prefixes'>;
  readonly instanceId: string;
  /** The subnet's IPv6 CIDRs from IMDS; none: the subnet is IPv4-only and no call is made. */
  readonly subnetIpv6Cidrs: readonly string[] | undefined;
  readonly subnetId: string;
  /** IPv6 addresses the ledger's attachments hold: the /80 holding them is the one to keep. */
  readonly heldAddresses: () => readonly string[];
  readonly log: PoolLog;
}

export type Ipv6PrefixClaim =
  | { readonly kind: 'held'; readonly prefix: string; readonly eniId: string; readonly adopted: boolean }
  /** `retryable`: a later attempt may succeed (throttling, a network fault); else it needs an operator. */
  | { readonly kind: 'unavailable'; readonly reason: string; readonly retryable: boolean };

export async function claimIpv6Prefix(d: Ipv6PrefixClaimDeps): Promise<Ipv6PrefixClaim> {
  if (d.subnetIpv6Cidrs === undefined || d.subnetIpv6Cidrs.length === 0) {
    return {
      kind: 'unavailable',
      reason: `subnet ${d.subnetId} of the primary ENI has no IPv6 CIDR block: ENABLE_IPv6=true needs a dual-stack subnet`,
      retryable: false,
    };
  }
  let primary: EniInfo;
  try {
    primary = await primaryEni(d);
    const held = await keepOne(d, primary);
    if (held !== undefined) return { kind: 'held', prefix: held, eniId: primary.eniId, adopted: true };
  } catch (err) {
    return unavailable('cannot read the primary ENI from EC2', err);
  }
  try {
    const [prefix] = await d.cloud.assignIpv6Prefixes(primary.eniId, 1);
    if (prefix === undefined) throw new Error('EC2 assigned no /80');
    d.log.info('assigned an IPv6 /80 to the primary ENI', { eniId: primary.eniId, prefix });
    return { kind: 'held', prefix, eniId: primary.eniId, adopted: false };
  } catch (err) {
    // The call may have been carried out and only its reply lost: look before trying again.
    const after = await primaryEni(d).then(
      (eni) => eni.ipv6Prefixes?.[0],
      () => undefined,
    );
    if (after !== undefined) {
      d.log.warn('IPv6 /80 assign failed but EC2 lists one on the primary ENI: adopting it', {
        eniId: primary.eniId,
        prefix: after,
        error: errorText(err),
      });
      return { kind: 'held', prefix: after, eniId: primary.eniId, adopted: true };
    }
    return unavailable(`cannot assign an IPv6 /80 to primary ENI ${primary.eniId}`, err);
  }
}

async function primaryEni(d: Ipv6PrefixClaimDeps): Promise<EniInfo> {
  const enis = await d.cloud.describeInstanceEnis(d.instanceId);
  const primary = enis.find((e) => e.deviceNumber === 0);
  if (primary === undefined) throw new Error(`EC2 lists no ENI at device index 0 of ${d.instanceId}`);
  return primary;
}

/**
 * The /80 to keep when the ENI holds some: the one the ledger's addresses are in, else the first.
 * Any other /80 holding none of them (left by an earlier lost reply) is given back, best effort.
 */
async function keepOne(d: Ipv6PrefixClaimDeps, eni: EniInfo): Promise<string | undefined> {
  const prefixes = eni.ipv6Prefixes ?? [];
  if (prefixes.length === 0) return undefined;
  const held = d.heldAddresses().filter(isIpv6).map(parseIpv6);
  const holding = (p: string) => held.some((a) => ipv6CidrContains(parseIpv6Cidr(p), a));
  const keep = prefixes.find(holding) ?? prefixes[0]!;
  const spare = prefixes.filter((p) => p !== keep && !holding(p));
  if (spare.length > 0) {
    await d.cloud.unassignIpv6Prefixes(eni.eniId, spare).then(
      () => d.log.info('gave back IPv6 /80s beyond the one the node uses', { eniId: eni.eniId, spare }),
      (err: unknown) => d.log.warn('cannot give back spare IPv6 /80s', { spare, error: errorText(err) }),
    );
  }
  const others = prefixes.filter((p) => p !== keep && holding(p));
  if (others.length > 0) {
    d.log.error('pods hold addresses of more than one IPv6 /80: only the first serves new pods', {
      keep,
      others,
    });
  }
  d.log.info('adopted the IPv6 /80 the primary ENI holds', { eniId: eni.eniId, prefix: keep });
  return keep;
}

function unavailable(doing: string, err: unknown): Ipv6PrefixClaim {
  const retryable = (err as { retryable?: unknown }).retryable !== false;
  return { kind: 'unavailable', reason: `${doing}: ${errorText(err)}`, retryable };
}
