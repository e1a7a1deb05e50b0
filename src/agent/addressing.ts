// How the node's pods get their addresses, chosen once at start (ENABLE_IPv6): IPv4 from the warm
// pool of ENI addresses that the pool manager grows from EC2 (with the node's SNAT, NodePort support
// and the VPC CIDR refresh), or IPv6 from the primary ENI's /80 (ipv6/ipv6-addressing.ts; the IPv4
// pool's manager is then built for the trunk and explain, but never rebuilt or started). Whatever
// the agent does differently in the two modes is behind this one interface.
import type { Registry } from 'prom-client';
import type { Cloud, InstanceMetadata } from '../cloud/cloud.ts';
import type { AgentConfig } from '../config/agent-config.ts';
import type { Dataplane } from '../dataplane/dataplane.ts';
import { tcpEarlyDemuxProblem } from '../dataplane/tcp-early-demux.ts';
import type { Logger } from '../infra/log.ts';
import type { AddressPool } from '../ipam/pool/pool.ts';
import type { PoolInitOptions, PoolManager } from '../ipam/pool/pool-manager.ts';
import type { WarmPoolTargets } from '../ipam/pool/targets.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { AddressSource } from './address-source.ts';
import type { AddContext } from './context.ts';
import { ipv6RecoveryAddresses, startIpv6Mode, withIpv6Pool } from './ipv6/ipv6-addressing.ts';
import { setupIpv4Node } from './loops/ipv4-node-setup.ts';
import type { VpcCidrRefreshResult } from './loops/vpc-cidr-refresh.ts';
import { poolRecoveryAddresses, type RecoveryAddresses } from './recovery/recovery.ts';

export interface Addressing {
  readonly family: 'ipv4' | 'ipv6';
  /** Where ADD takes addresses and DEL gives them back. */
  readonly addresses: AddressSource;
  /** What ADD's context gains: the node-local addresses of its pods' egress of the other family. */
  readonly context: Pick<AddContext, 'v4Egress' | 'v6Egress'>;
  /**
   * Rebuilds the addresses from the cloud before recovery and before anything is lent: IPv4, the
   * pool from EC2's view of the ENIs (each link configured first), then the ledger's assignments and
   * cooldowns; IPv6, nothing more (the /80 was read when the mode started). `describeWith` runs
   * the describe of the node's ENIs (the start's: again while EC2 throttles it).
   */
  rebuildFromCloud(describeWith?: PoolInitOptions['describeWith']): Promise<void>;
  /** What recovery of a lost ledger reads and holds. */
  readonly recovery: RecoveryAddresses;
  /** Whether an ADD could get an address now (the startup taint waits for one). */
  hasFreeAddress(): boolean;
  /** The state's pool section with this mode's own figures. */
  withPoolView<S extends { pool: object }>(state: S): S;
  /** Starts this mode's background work once the agent serves. */
  start(): void;
  /** Everything start() started, to stop with the agent. */
  readonly loops: readonly { stop(): unknown }[];
}

export interface AddressingDeps {
  readonly config: AgentConfig;
  readonly cloud: Cloud;
  readonly meta: InstanceMetadata;
  readonly ledger: Ledger;
  readonly targets: WarmPoolTargets;
  readonly dataplane: Dataplane;
  readonly log: Logger;
  readonly now: () => number;
  readonly registry: Registry;
  readonly vpcCidrRefreshed: (result: VpcCidrRefreshResult) => void;
  /** The IPv4 pool and its manager (built in both modes; rebuilt and started in IPv4 mode only). */
  readonly pool: AddressPool;
  readonly manager: PoolManager;
}

/** Sets the node up for the configured mode and returns it; the only place that asks which. */
export async function startAddressing(d: AddressingDeps): Promise<Addressing> {
  // Either mode: the install step's sysctl, checked (the agent sets none).
  const earlyDemux = await tcpEarlyDemuxProblem(d.dataplane.kernel, d.config.podNetwork.disableTcpEarlyDemux);
  if (earlyDemux !== undefined) d.log.warn(earlyDemux);
  // IPv6 mode: forwarding checked, pod addresses from the primary ENI's /80, IPv4 egress.
  const ipv6 = await startIpv6Mode(d);
  if (ipv6) {
    const { addresses } = ipv6;
    return {
      family: 'ipv6',
      addresses,
      context: ipv6.context,
      rebuildFromCloud: async () => {},
      recovery: ipv6RecoveryAddresses(addresses),
      hasFreeAddress: () => addresses.prefix !== undefined,
      withPoolView: (state) => withIpv6Pool(state, addresses),
      start: () => {},
      loops: [],
    };
  }
  // IPv4 mode: SNAT, NodePort support, external service CIDRs, IPv6 egress, the VPC CIDR refresh.
  const { vpcCidrRefresh, context } = await setupIpv4Node(d);
  const { pool, manager, now } = d;
  return {
    family: 'ipv4',
    addresses: manager,
    context,
    rebuildFromCloud: async (describeWith) => {
      await manager.init({ configureLinks: true, ...(describeWith === undefined ? {} : { describeWith }) });
    },
    recovery: poolRecoveryAddresses(pool),
    hasFreeAddress: () => pool.stats(now()).available > 0,
    withPoolView: (state) => state,
    start() {
      manager.start();
      vpcCidrRefresh?.start();
    },
    // The manager is the agent's to stop in either mode (it is built in both).
    loops: vpcCidrRefresh ? [vpcCidrRefresh] : [],
  };
}
