// What the pool manager is built from and what it reports: its dependencies and options
// (pool-manager.ts), kept apart so the manager's file holds only its behaviour.
import type { Cloud, InstanceMetadata, InstanceTypeLimits } from '../../cloud/cloud.ts';
import type { Ec2BudgetView } from '../../cloud/limited-cloud.ts';
import type { CensusAssignFigures } from '../census/census-assigner.ts';
import type { SubnetCensusSource } from '../census/census-source.ts';
import type { CloudSyncState } from '../cloud-sync/cloud-sync.ts';
import type { EniPlacer } from '../enis/eni-placement.ts';
import type { EniTagOptions } from '../enis/eni-tags.ts';
import type { LeakedEniCleanup } from '../enis/leaked-enis.ts';
import type { PendingEniRecords } from '../enis/pending-enis.ts';
import type { PrefixModeOptions, PrefixModeState } from '../prefixes/prefix-pool.ts';
import type { AddressPool } from './pool.ts';
import type { PoolLedger } from './pool-addresses.ts';
import type { DrainState } from './pool-drain.ts';
import type { GrowthState } from './pool-growth-health.ts';
import type { EniLinkHooks, PoolLog, PoolObserver } from './pool-parts.ts';
import type { WarmPoolTargets } from './targets.ts';

export interface PoolManagerDeps extends EniLinkHooks {
  readonly cloud: Cloud;
  readonly pool: AddressPool;
  readonly clock: { now(): number };
  readonly log: PoolLog;
  readonly metadata: InstanceMetadata;
  readonly limits: InstanceTypeLimits;
  readonly targets: WarmPoolTargets;
  /**
   * The agent's Ledger: init() restores assignments and cooldowns from it, release() records
   * cooldowns in it, expired cooldowns leave it; ENIs part-way through being created or freed are
   * recorded in it, and init() resumes them.
   */
  readonly ledger?: PoolLedger & PendingEniRecords;
  /** CLUSTER_NAME and ADDITIONAL_ENI_TAGS, for the ENIs vpcnet creates. */
  readonly eniTags?: EniTagOptions;
  /** Subnet and security groups of new ENIs (default: the primary ENI's; eni-placement.ts). */
  readonly eniPlacement?: EniPlacer;
  /** An ENI attached less than this ago is not freed (default: the upstream's minute). */
  readonly minEniLifetimeMs?: number;
  /** The leaked-ENI sweep (default: on, the upstream's grace and interval). */
  readonly leakedEniCleanup?: LeakedEniCleanup;
  /** Period of the background loop (default 5 s). */
  readonly intervalMs?: number;
  /** First retry delay after a failed pass (default 1 s), doubled per failure up to maxBackoffMs (default 60 s). */
  readonly retryBaseMs?: number;
  readonly maxBackoffMs?: number;
  /** ENABLE_PREFIX_DELEGATION and WARM_PREFIX_TARGET (default: off). */
  readonly prefixMode?: PrefixModeOptions;
  /** Period of the comparison with EC2 (cloud-sync.ts; default 60 s). */
  readonly syncIntervalMs?: number;
  /** How stale a DescribeNetworkInterfaces may be (default 60 s): the sync's confirmation window. */
  readonly staleWindowMs?: number;
  /** Period of the reads of the subnets' tags that decide what drains (pool-drain.ts; default 5 min). */
  readonly subnetTagsIntervalMs?: number;
  /** Told when a pass grows or shrinks the pool, an EC2 sync runs, an ENI is left over (metrics). */
  readonly observer?: PoolObserver;
  /**
   * Whether the pool may change the node's ENIs and addresses in EC2 (default true). False under
   * DISABLE_NETWORK_RESOURCE_PROVISIONING and ENABLE_IMDS_ONLY_MODE: the pool lends what is already
   * attached, never grows, shrinks or frees an ENI, and sweeps no leaked ENI.
   */
  readonly provisioning?: boolean;
  /**
   * ENABLE_IMDS_ONLY_MODE (default false): addresses join the pool held back and are lent only
   * once two reads of the ENIs, the stale window apart, both list them (the cloud sync's rule).
   */
  readonly lendOnlyConfirmed?: boolean;
  /**
   * MANAGE_UNTAGGED_ENI (default true): false leaves alone every ENI neither tagged for this
   * instance nor tagged no_manage with another value than true (eni-ownership.ts).
   */
  readonly manageUntaggedEnis?: boolean;
  /**
   * AWS_MANAGE_ENIS_NON_SCHEDULABLE=false: whether the node is unschedulable now (cordoned, taint
   * node.kubernetes.io/unschedulable:NoSchedule). While it is, the pool adds no address or ENI and
   * frees no ENI, as upstream. Absent: the pool manages ENIs whatever the node's state.
   */
  readonly nodeUnschedulable?: () => Promise<boolean>;
  /**
   * The agent's EC2 budget (LimitedCloud): top-ups sized to its rate, the state and an ADD's error
   * saying when growth waits for a token, and no releases while EC2 throttles. Absent: none of it.
   */
  readonly ec2Budget?: Ec2BudgetView;
  /**
   * The cluster's subnet census (the agent's census loop): prefixes are asked only of subnets it
   * says have a free /28, and secondary IPs are named inside already-broken /28s. Absent: as
   * upstream, by EC2's counts and picks.
   */
  readonly census?: SubnetCensusSource;
}

/** The pool's health, for the agent's state. */
export interface PoolHealth {
  readonly growth: GrowthState;
  readonly sync: CloudSyncState;
  /** ENABLE_PREFIX_DELEGATION, and whether the pool fell back to secondary IPs (no free /28). */
  readonly prefixes?: PrefixModeState & {
    readonly enabled: boolean;
    readonly fallbacks: number;
    /** Prefix asks not sent: the census showed the subnet without a free /28. */
    readonly censusSkips: number;
  };
  /** Subnet discovery: the subnets whose ENIs drain, and those ENIs. */
  readonly drain?: DrainState;
  /** False: the pool changes nothing in EC2 (DISABLE_NETWORK_RESOURCE_PROVISIONING, IMDS-only mode). */
  readonly provisioning: boolean;
  /** Why the pool gives nothing back now (EC2 throttles), when it does not. */
  readonly releasesHeld?: string;
  /** Secondary IPs assigned by name from the census, refused by name, and assigned by count. */
  readonly singles: CensusAssignFigures;
}

export interface PoolInitOptions {
  /**
   * Configure each managed ENI's link through onEniAttached before its addresses enter the pool
   * (a failure fails init). Without it (deprecated), the caller configures the returned ENIs itself.
   */
  readonly configureLinks?: boolean;
  /**
   * Runs the describe of the node's ENIs that init begins with (nothing has changed before it):
   * the agent's start passes one that tries again while EC2 throttles it. Absent: once.
   */
  readonly describeWith?: <T>(describe: () => Promise<T>) => Promise<T>;
}
