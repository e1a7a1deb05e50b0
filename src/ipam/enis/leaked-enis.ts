// The leaked-ENI sweep (the upstream's cleanUpLeakedENIs): ENIs this node's vpcnet created that
// sit detached ("available") are deleted once they are older than a grace period. It covers
// what the ledger cannot: a lost state directory, an agent from before the ledger recorded ENIs,
// an ENI made by a try that failed and was followed by throttles. DISABLE_LEAKED_ENI_CLEANUP
// turns it off.
// It also resolves creations in doubt (pending-enis.ts): a CreateNetworkInterface recorded in the
// ledger whose ENI was never recorded, because the agent was killed while EC2 answered or the
// reply was lost. Their ENI carries the recorded createdAt tag; it is deleted without a grace as
// soon as a describe shows it, looked for every few seconds for a minute (EC2's describes may lag
// a creation), whatever the setting: it is an ENI this agent made and knows it has no use for.

import { CloudError, type DetachedEni } from '../../cloud/cloud.ts';
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolParts } from '../pool/pool-parts.ts';
import { carriesVpcnetMark, INSTANCE_ID_TAG, ofThisCluster } from './eni-ownership.ts';
import { CREATED_AT_TAG, createdAtTagValue, parseCreatedAtTag } from './eni-tags.ts';
import type { EniCreateRecord } from './pending-enis.ts';

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

/** How long a creation in doubt is looked for, from its record or from when this agent first looked. */
export const CREATE_IN_DOUBT_LOOK_MS = 60_000;
/** How often it is looked for meanwhile (one DescribeNetworkInterfaces per look). */
export const CREATE_IN_DOUBT_EVERY_MS = 5_000;

type SweepParts = Pick<
  PoolParts,
  'cloud' | 'clock' | 'log' | 'metadata' | 'registry' | 'eniTags' | 'journal'
>;

export class LeakedEniSweep {
  readonly #p: SweepParts;
  readonly #options: LeakedEniCleanup;
  /** When an ENI without a (valid) createdAt tag was first seen: its age is counted from then. */
  readonly #firstSeen = new Map<string, number>();
  /** The first sweep runs at the first pass after start. */
  #dueAt: number | undefined;
  /** The next look for creations in doubt (0: at the first pass that has some). */
  #lookAt = 0;
  /** When this agent first looked for each creation in doubt (by token). */
  readonly #lookingSince = new Map<string, number>();
  #deleted = 0;

  constructor(parts: SweepParts, options: LeakedEniCleanup) {
    this.#p = parts;
    this.#options = options;
  }

  /** ENIs the sweep deleted since start. */
  get deleted(): number {
    return this.#deleted;
  }

  /**
   * Sweeps when one is due, or looks for creations in doubt when a look is due; a failed sweep is
   * logged and tried again at the next interval (a failed look at the next look).
   */
  async runIfDue(): Promise<void> {
    const now = this.#p.clock.now();
    const sweepDue = this.#options.enabled && (this.#dueAt === undefined || now >= this.#dueAt);
    const lookDue = this.#p.journal.createsInDoubt().length > 0 && now >= this.#lookAt;
    if (!sweepDue && !lookDue) return;
    if (sweepDue) this.#dueAt = now + this.#options.intervalMs;
    if (lookDue) this.#lookAt = now + CREATE_IN_DOUBT_EVERY_MS;
    try {
      await this.sweep();
    } catch (err) {
      this.#p.log.warn('leaked-ENI sweep failed; will retry', { error: cloudErrorText(err) });
    }
  }

  /**
   * Deletes the ENIs of creations in doubt, and (unless turned off) this node's detached vpcnet
   * ENIs that are past their grace; returns how many of the latter. An ENI still in its grace
   * brings the next sweep forward to when the grace ends.
   */
  async sweep(): Promise<number> {
    const { cloud, clock, metadata, journal } = this.#p;
    const now = clock.now();
    const found = await cloud.describeDetachedEnis(INSTANCE_ID_TAG, metadata.instanceId);
    this.#forgetGone(found);
    const doubts = journal.createsInDoubt();
    // An ENI this agent is creating right now is on its way, not in doubt, even in the same second.
    const makingNow = new Set(journal.creatingNow().map(createdAtTagValue));
    const resolved = new Set<string>();
    let deleted = 0;
    for (const eni of found.filter((e) => this.#isOurs(e))) {
      const tag = eni.tags[CREATED_AT_TAG];
      const of = doubts.filter((d) => createdAtTagValue(d.createdAt) === tag);
      if (of.length > 0 && tag !== undefined && !makingNow.has(tag)) {
        if (await this.#deleteInDoubt(eni, of)) for (const d of of) resolved.add(d.token);
        continue;
      }
      if (!this.#options.enabled) continue;
      const oldAt = this.#createdAt(eni, now) + this.#options.graceMs;
      if (now < oldAt) {
        this.#dueAt = Math.min(this.#dueAt ?? oldAt, oldAt);
        continue;
      }
      if (await this.#delete(eni, now)) deleted++;
    }
    await this.#settleDoubts(doubts, resolved, now);
    return deleted;
  }

  /** Drops the records whose ENI was deleted, and those looked for long enough in vain. */
  async #settleDoubts(doubts: readonly EniCreateRecord[], resolved: ReadonlySet<string>, now: number) {
    const { journal, log } = this.#p;
    for (const d of doubts) {
      const since = this.#lookingSince.get(d.token) ?? now;
      this.#lookingSince.set(d.token, since);
      const given = now - Math.max(d.since, since) >= CREATE_IN_DOUBT_LOOK_MS;
      if (!resolved.has(d.token) && !given) continue;
      this.#lookingSince.delete(d.token);
      await journal.createResolved(d.token);
      if (!resolved.has(d.token))
        log.info('no ENI of an interrupted creation turned up; EC2 made none (a late one is the sweep’s)', {
          subnet: d.subnetId,
          createdAt: createdAtTagValue(d.createdAt),
        });
    }
  }

  async #deleteInDoubt(eni: DetachedEni, of: readonly EniCreateRecord[]): Promise<boolean> {
    const { cloud, log } = this.#p;
    try {
      await cloud.deleteEni(eni.eniId);
    } catch (err) {
      if (err instanceof CloudError && err.code === 'InvalidNetworkInterfaceID.NotFound') return true;
      log.warn('cannot delete the ENI of an interrupted creation yet; will retry', {
        eni: eni.eniId,
        error: cloudErrorText(err),
      });
      return false;
    }
    log.info('deleted the ENI of an interrupted creation', {
      eni: eni.eniId,
      subnet: of[0]?.subnetId,
      createdAt: eni.tags[CREATED_AT_TAG],
    });
    return true;
  }

  /**
   * Ownership: only an ENI vpcnet created (its tag or description), that may be this cluster's
   * (ofThisCluster), and not one the registry knows or the ledger records: attached, being attached
   * or freed (the passes finish those), or already deleted (a describe that still lists it is stale).
   */
  #isOurs(eni: DetachedEni): boolean {
    if (!carriesVpcnetMark(eni)) return false;
    if (!ofThisCluster(eni.tags, this.#p.eniTags.clusterName)) return false;
    // A recorded ENI (being attached, or freed) is the ledger's to finish.
    return !this.#p.registry.knows(eni.eniId) && this.#p.journal.get(eni.eniId) === undefined;
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
