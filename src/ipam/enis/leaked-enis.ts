// The leaked-ENI sweep (the upstream's cleanUpLeakedENIs): ENIs this node's vpcnet created that
// sit detached ("available") are deleted once they are older than a grace period. It covers
// what the ledger cannot: a kill between CreateNetworkInterface and the ledger write, a lost
// state directory, an agent from before the ledger recorded ENIs. DISABLE_LEAKED_ENI_CLEANUP
// turns it off.

import { CloudError, type DetachedEni } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolParts } from '../pool/pool-parts.ts';
import { carriesVpcnetMark, INSTANCE_ID_TAG, ofThisCluster } from './eni-ownership.ts';
import { CREATED_AT_TAG, parseCreatedAtTag } from './eni-tags.ts';

export interface LeakedEniCleanup {
  /** false: DISABLE_LEAKED_ENI_CLEANUP=true. */
  readonly enabled: boolean;
  /** An ENI younger than this (by its createdAt tag) may be on its way to being attached. */
  readonly graceMs: number;
  /** How often EC2 is asked (one DescribeNetworkInterfaces per sweep). */
  readonly intervalMs: number;
}

/** The upstream's values: 5 minutes' grace (eniDeleteCooldownTime), a sweep every hour. */
export const DEFAULT_LEAKED_ENI_CLEANUP: LeakedEniCleanup = {
  enabled: true,
  graceMs: 5 * 60_000,
  intervalMs: 60 * 60_000,
};

type SweepParts = Pick<PoolParts, 'cloud' | 'clock' | 'log' | 'metadata' | 'registry' | 'eniTags'>;

export class LeakedEniSweep {
  readonly #p: SweepParts;
  readonly #options: LeakedEniCleanup;
  /** When an ENI without a (valid) createdAt tag was first seen: its age is counted from then. */
  readonly #firstSeen = new Map<string, number>();
  /** The first sweep runs at the first pass after start. */
  #dueAt: number | undefined;
  #deleted = 0;

  constructor(parts: SweepParts, options: LeakedEniCleanup) {
    this.#p = parts;
    this.#options = options;
  }

  /** ENIs the sweep deleted since start. */
  get deleted(): number {
    return this.#deleted;
  }

  /** Sweeps when one is due; a failed sweep is logged and tried again at the next interval. */
  async runIfDue(): Promise<void> {
    const now = this.#p.clock.now();
    if (!this.#options.enabled || (this.#dueAt !== undefined && now < this.#dueAt)) return;
    this.#dueAt = now + this.#options.intervalMs;
    try {
      await this.sweep();
    } catch (err) {
      this.#p.log.warn('leaked-ENI sweep failed; will retry', { error: cloudErrorText(err) });
    }
  }

  /**
   * Deletes this node's detached vpcnet ENIs that are past their grace; returns how many. An ENI
   * still in its grace brings the next sweep forward to when the grace ends.
   */
  async sweep(): Promise<number> {
    const { cloud, clock, metadata } = this.#p;
    const now = clock.now();
    const found = await cloud.describeDetachedEnis(INSTANCE_ID_TAG, metadata.instanceId);
    this.#forgetGone(found);
    let deleted = 0;
    for (const eni of found.filter((e) => this.#isOurs(e))) {
      const oldAt = this.#createdAt(eni, now) + this.#options.graceMs;
      if (now < oldAt) {
        this.#dueAt = Math.min(this.#dueAt ?? oldAt, oldAt);
        continue;
      }
      if (await this.#delete(eni, now)) deleted++;
    }
    return deleted;
  }

  /**
   * Ownership: only an ENI vpcnet created (its tag or description), that may be this cluster's
   * (ofThisCluster), and not one the registry knows: attached, being freed (the passes finish
   * those), or already deleted (a describe that still lists it is stale).
   */
  #isOurs(eni: DetachedEni): boolean {
    if (!carriesVpcnetMark(eni)) return false;
    if (!ofThisCluster(eni.tags, this.#p.eniTags.clusterName)) return false;
    return !this.#p.registry.knows(eni.eniId);
  }

  #createdAt(eni: DetachedEni, now: number): number {
    const tagged = parseCreatedAtTag(eni.tags[CREATED_AT_TAG]);
    if (tagged !== undefined) return tagged;
    const seen = this.#firstSeen.get(eni.eniId);
    if (seen !== undefined) return seen;
    this.#firstSeen.set(eni.eniId, now);
    return now;
  }

  async #delete(eni: DetachedEni, now: number): Promise<boolean> {
    const { cloud, log } = this.#p;
    const ageMs = now - this.#createdAt(eni, now);
    try {
      await cloud.deleteEni(eni.eniId);
    } catch (err) {
      if (!(err instanceof CloudError && err.code === 'InvalidNetworkInterfaceID.NotFound'))
        log.warn('cannot delete leaked ENI yet; will retry', { eni: eni.eniId, error: cloudErrorText(err) });
      return false;
    }
    this.#firstSeen.delete(eni.eniId);
    this.#deleted++;
    log.info('deleted leaked ENI', {
      eni: eni.eniId,
      createdAt: eni.tags[CREATED_AT_TAG] ?? 'untagged',
      ageMs,
    });
    return true;
  }

  #forgetGone(found: readonly DetachedEni[]): void {
    const ids = new Set(found.map((e) => e.eniId));
    for (const id of this.#firstSeen.keys()) if (!ids.has(id)) this.#firstSeen.delete(id);
  }
}
