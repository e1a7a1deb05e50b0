// IPv6 mode's addressing (ENABLE_IPv6=true): the agent takes its pod addresses from the /80 on
// the primary ENI (ipam/ipv6-prefix-pool.ts) instead of the IPv4 pool and its manager, which are
// then never started: no ENI growth, no warm targets, no EC2 sync of IPv4 pools, and no IPv4 SNAT
// set-up for pod addresses (IPv4 egress of IPv6 pods is the pod plan's, ENABLE_V4_EGRESS).
import type { Registry } from 'prom-client';
import type { Cloud, InstanceMetadata } from '../../cloud/cloud.ts';
import type { AgentConfig } from '../../config/agent-config.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import type { Logger } from '../../infra/log.ts';
import type { PoolLedger } from '../../ipam/pool/pool-addresses.ts';
import type { WarmPoolTargets } from '../../ipam/pool/targets.ts';
import { Ipv6PrefixPool } from '../../ipam/prefixes/ipv6-prefix-pool.ts';
import { attachmentKeyString } from '../../plan/attachment.ts';
import { type RecoveredRecord, recoveredHolderKey } from '../../plan/recovered.ts';
import type { OperationContext } from '../context.ts';
import type { RecoveryAddresses } from '../recovery/recovery.ts';
import { registerIpv6Metrics } from './ipv6-metrics.ts';
import { startIpv6 } from './ipv6-start.ts';

export interface Ipv6AddressingDeps {
  readonly config: Pick<AgentConfig, 'ipv6'>;
  readonly cloud: Cloud;
  readonly meta: InstanceMetadata;
  readonly ledger: PoolLedger & { recovered(): readonly RecoveredRecord[] };
  readonly targets: WarmPoolTargets;
  readonly log: Logger;
  readonly now: () => number;
}

/** The IPv6 source, its /80 claimed (or the reason it is not in its view); undefined in IPv4 mode. */
export async function startIpv6Addressing(d: Ipv6AddressingDeps): Promise<Ipv6PrefixPool | undefined> {
  if (!d.config.ipv6.enabled) return undefined;
  const source = new Ipv6PrefixPool({
    cloud: d.cloud,
    instanceId: d.meta.instanceId,
    subnetId: d.meta.subnetId,
    subnetIpv6Cidrs: d.meta.subnetIpv6Cidrs,
    ledger: d.ledger,
    recoveredAddresses: () =>
      d.ledger
        .recovered()
        .flatMap((r) =>
          r.ip === undefined ? [] : [{ ip: r.ip, owner: attachmentKeyString(recoveredHolderKey(r)) }],
        ),
    clock: { now: d.now },
    cooldownMs: d.targets.cooldownSeconds * 1000,
    log: d.log,
  });
  await source.start();
  d.log.info('IPv6 mode: pods get addresses of the primary ENI /80', { ...source.view() });
  return source;
}

/** IPv6 mode as the agent runs it: the /80's addresses, and what the operations' context gains. */
export interface Ipv6Mode {
  readonly addresses: Ipv6PrefixPool;
  readonly context: Pick<OperationContext, 'v4Egress'>;
}

/**
 * IPv6 mode's start, undefined in IPv4 mode: the node first (forwarding checked, the start refused
 * when it is off, before anything is asked of EC2; the IPv4 egress SNAT), then the /80 and its gauges.
 */
export async function startIpv6Mode(
  d: Ipv6AddressingDeps & {
    readonly config: Pick<AgentConfig, 'ipv6' | 'snat'>;
    readonly dataplane: Dataplane;
    readonly registry: Registry;
  },
): Promise<Ipv6Mode | undefined> {
  if (!d.config.ipv6.enabled) return undefined;
  const context = await startIpv6(d.config, d.dataplane, d.meta.primaryIp);
  const addresses = await startIpv6Addressing(d);
  if (addresses === undefined) return undefined;
  registerIpv6Metrics(d.registry, addresses);
  return { addresses, context };
}

/**
 * IPv6 mode's /80 as recovery of a lost ledger reads and holds it: a pod's address is known by the
 * kernel's host route or the API's podIP inside the /80; EC2 lists no single addresses to
 * quarantine (a /80 has 2^48).
 */
export function ipv6RecoveryAddresses(source: Ipv6PrefixPool): RecoveryAddresses {
  return {
    listed: () => new Map(),
    eniOf: (ip) => source.eniOf(ip),
    hold: (ip, owner) => source.hold(ip, owner),
    isFree: () => false,
    quarantine: () => {},
    cooldownMs: 0,
  };
}

/**
 * Settings of IPv4 mode that IPv6 mode ignores, as upstream does: the IPv4 pool's targets, IPv6
 * egress (IPv6 pods have IPv6), and external service CIDRs (IPv6 pods have no ENI tables to
 * bypass: the main table routes them all).
 */
const IGNORED_IN_IPV6_MODE = [
  'WARM_ENI_TARGET',
  'WARM_IP_TARGET',
  'MINIMUM_IP_TARGET',
  'WARM_PREFIX_TARGET',
  'MAX_ENI',
  'ENABLE_V6_EGRESS',
  'AWS_EXTERNAL_SERVICE_CIDRS',
] as const;

/** The ones set in `env`: the agent warns about each, so that none is ignored silently. */
export function ignoredInIpv6Mode(env: Readonly<Record<string, string | undefined>>): string[] {
  return IGNORED_IN_IPV6_MODE.filter((name) => env[name] !== undefined);
}

/** The agent's state with the IPv6 source's figures (its /80, addresses held) in the pool section. */
export function withIpv6Pool<S extends { pool: object }>(state: S, source: Ipv6PrefixPool | undefined): S {
  return source === undefined ? state : { ...state, pool: { ...state.pool, ipv6: source.view() } };
}
