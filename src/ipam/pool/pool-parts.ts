// What the pool manager's parts (growth, shrink, the addresses ADD and DEL use) share: the cloud,
// the in-memory pool, the ENI registry and the hooks into the agent's dataplane.

import type { Cloud, EniInfo, InstanceMetadata, InstanceTypeLimits } from '../../cloud/cloud.ts';
import type { CensusAssigner } from '../census/census-assigner.ts';
import type { SubnetCensusSource } from '../census/census-source.ts';
import type { EniPlacer } from '../enis/eni-placement.ts';
import type { EniRegistry } from '../enis/eni-registry.ts';
import type { EniTagOptions } from '../enis/eni-tags.ts';
import type { EniJournal } from '../enis/pending-enis.ts';
import type { AddressPool } from './pool.ts';
import type { WarmPoolTargets } from './targets.ts';

type Fields = Record<string, unknown>;

/** The slice of the agent's logger the manager uses. */
export interface PoolLog {
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

/** The agent's dataplane, as the ENI lifecycle needs it. */
export interface EniLinkHooks {
  /**
   * Configures the host link of an attached ENI. Its addresses enter the pool only after this
   * succeeds; a failure is retried on the next pass.
   */
  readonly onEniAttached?: (eni: EniInfo) => Promise<void>;
  /**
   * Tears down the host link config of an ENI about to be detached. Called after the ENI left the
   * pool and before the cloud detaches it; a failure keeps the ENI.
   */
  readonly onEniDetaching?: (eni: EniInfo) => Promise<void>;
}

/** What the pool does in the background, as its observer is told (the agent's metrics). */
export type PoolAction = 'grow' | 'shrink' | 'ec2Sync';

/** Optional hooks for the agent's metrics; the pool behaves the same without them. */
export interface PoolObserver {
  /** An action began; the returned function is called once it has ended (whatever its outcome). */
  readonly actionStarted?: (action: PoolAction) => () => void;
  /**
   * A new ENI could neither be attached nor deleted: it is left over, and its delete is retried.
   * The one failure of the cloud that nothing returns to a caller.
   */
  readonly eniLeftOver?: (eniId: string, err: unknown) => void;
}

export interface PoolParts {
  readonly cloud: Cloud;
  readonly pool: AddressPool;
  readonly registry: EniRegistry;
  readonly clock: { now(): number };
  readonly log: PoolLog;
  readonly metadata: InstanceMetadata;
  readonly limits: InstanceTypeLimits;
  readonly targets: WarmPoolTargets;
  readonly links: EniLinkHooks;
  /** Where ENIs part-way through being created or freed are recorded (the ledger). */
  readonly journal: EniJournal;
  /** What the ENIs vpcnet creates are tagged with besides its own marks. */
  readonly eniTags: EniTagOptions;
  /** Where each new ENI goes (subnet, security groups), and whether the primary ENI lends addresses. */
  readonly placement: EniPlacer;
  readonly observer?: PoolObserver;
  /**
   * IMDS-only mode: an ENI's addresses join the pool held back, lent only once the cloud sync's
   * second read confirms them.
   */
  readonly lendOnlyConfirmed: boolean;
  /** MANAGE_UNTAGGED_ENI: ENIs not tagged for this instance are used too (eni-ownership.ts). */
  readonly manageUntagged: boolean;
  /** The cluster's subnet census, when there is one (placement by free /28s, named /32s). */
  readonly census?: SubnetCensusSource;
  /** Every secondary-IP assignment goes through it: named from the census, or by count. */
  readonly singles: CensusAssigner;
}
