// Finding the node's ENIs: at start the pool is rebuilt from what EC2 lists attached (ENIs the
// ledger records as being created or freed are finished instead, never lent), and ENIs attached
// later (a trunk, one attached by hand, one a sync finds) are registered as they turn up.

import type { EniInfo } from '../../cloud/cloud.ts';
import { wantSubnetsOf } from '../census/census-wants.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import { adoptEnis } from '../enis/eni-discovery.ts';
import { type EniJournal, resumePendingEnis } from '../enis/pending-enis.ts';
import type { PrefixBook } from '../prefixes/prefixes.ts';
import type { PoolAddresses } from './pool-addresses.ts';
import type { PoolDrain } from './pool-drain.ts';
import type { PoolGrowth } from './pool-growth.ts';
import type { PoolInitOptions, PoolManagerDeps } from './pool-manager-deps.ts';
import type { PoolParts } from './pool-parts.ts';

export interface DiscoveryParts {
  readonly deps: PoolManagerDeps;
  readonly parts: PoolParts;
  readonly journal: EniJournal;
  readonly book: PrefixBook;
  readonly growth: PoolGrowth;
  readonly addresses: PoolAddresses;
  readonly drain: PoolDrain;
  readonly provisioning: boolean;
  /** A pass soon: new ENIs may change what the pool should do. */
  readonly nudge: () => void;
}

export class PoolDiscovery {
  readonly #p: DiscoveryParts;

  constructor(parts: DiscoveryParts) {
    this.#p = parts;
  }

  /**
   * Rebuilds the pool from the ENIs attached to the instance (those vpcnet must not use are
   * registered as unmanaged), then assignments and cooldowns from the ledger. Returns the managed
   * ENIs. A half-done ADD's address comes back assigned: release() cools it down. `confirm` is
   * the cloud sync's comparison, run at once when addresses are lent only once confirmed.
   */
  async init(options: PoolInitOptions, confirm: () => Promise<unknown>): Promise<EniInfo[]> {
    const { deps, parts, journal, book, growth, addresses, drain } = this.#p;
    const { cloud, metadata, log, pool, clock } = deps;
    const describe = () => cloud.describeInstanceEnis(metadata.instanceId);
    const described = await (options.describeWith?.(describe) ?? describe());
    // ENIs the ledger records as being created or freed are finished, never adopted into the pool.
    const resumed = await resumePendingEnis(parts.registry, journal, log, described);
    const configure = options.configureLinks === true;
    for (const eni of described) book.learn(eni);
    wantSubnetsOf(deps.census, metadata, described);
    const { managed } = adoptEnis(parts, described, configure ? 'configuring' : 'ready');
    for (const eniId of resumed.attachedBeforeStop) parts.registry.deleteOnTerminationNeeded(eniId);
    if (configure) for (const eni of managed) await growth.configure(eni.eniId);
    addresses.restore();
    // Before anything is lent: an ENI whose subnet drains lends nothing from the start.
    await drain.refreshIfDue();
    log.info('address pool rebuilt from the cloud', {
      ...pool.stats(clock.now()),
      unmanaged: parts.registry.inState('unmanaged').length,
    });
    if (!this.#p.provisioning && journal.list().length > 0) {
      log.warn('ENI provisioning is off: ENIs vpcnet was creating or freeing are left as they are', {
        pendingEnis: journal.list().map((r) => `${r.eniId} (${r.step})`),
      });
    }
    // The read above is one; the comparisons confirm what a later read, the window apart, lists too.
    if (parts.lendOnlyConfirmed) await confirm();
    return managed;
  }

  /**
   * Registers ENIs EC2 lists attached that the registry does not know: a trunk or other unmanaged
   * ENI is only recorded; a regular one is configured and joins the pool (a failed link set-up is
   * retried by the passes). Returns the newly found ENIs.
   */
  async adopt(described: readonly EniInfo[]): Promise<EniInfo[]> {
    const { deps, parts, book, growth, drain } = this.#p;
    const { managed, unmanaged } = adoptEnis(parts, described, 'configuring');
    for (const eni of managed) book.learn(eni);
    wantSubnetsOf(deps.census, deps.metadata, managed);
    for (const eni of managed) {
      await growth.configure(eni.eniId).catch((err: unknown) =>
        deps.log.warn('new ENI attached; its link is not configured yet; will retry', {
          eni: eni.eniId,
          error: cloudErrorText(err),
        }),
      );
    }
    // An ENI found in a drained subnet lends nothing, not even before the next pass.
    drain.apply();
    if (managed.length > 0) this.#p.nudge();
    return [...unmanaged, ...managed];
  }
}
