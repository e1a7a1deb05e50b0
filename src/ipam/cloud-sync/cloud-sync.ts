// EC2 is the truth, continuously: a periodic pass (and one soon after a failed pool mutation)
// compares the pool with DescribeNetworkInterfaces for this instance and brings the pool in line.
//
// EC2 is eventually consistent, so a describe can be stale. Two rules keep a stale one harmless:
//   1. nothing is done about an ENI or address vpcnet itself changed within the stale window
//      before the describe started (pool-change-journal.ts): a describe that still lists an
//      address vpcnet just gave back cannot bring it back, one that misses an ENI vpcnet just
//      attached cannot drop it;
//   2. a difference is acted on only when two consecutive describes, started at least the stale
//      window apart, both show it (one that a describe in between did not show starts over).
// And one rule holds whatever EC2 says: an address a pod holds (pool or ledger) is never released
// or lent because a describe forgot it; it is kept, with a warning, and counted (ownership).
// Addresses come from EC2, except in IMDS-only mode, where the describes are IMDS reads: there
// every address joins the pool held back and is lent once rule 2 confirms it (addressUnconfirmed;
// rule 1 does not apply to it, as vpcnet changed nothing in the cloud by holding it back).

import type { EniInfo } from '../../cloud/cloud.ts';
import { PeriodicLoop } from '../../infra/periodic.ts';
import type { LedgerHeld, PoolAddresses } from '../pool/pool-addresses.ts';
import { PoolChangeJournal } from '../pool/pool-change-journal.ts';
import type { PoolParts } from '../pool/pool-parts.ts';
import type { PrefixBook } from '../prefixes/prefixes.ts';
import {
  compareWithEc2,
  DIFFERENCE_KINDS,
  type Difference,
  type DifferenceKind,
  differenceKey,
} from './cloud-differences.ts';
import { cloudErrorText } from './cloud-error-text.ts';

/** An ENI EC2 no longer lists as attached, which attachments' addresses were on. */
export interface LostEni {
  readonly eniId: string;
  /** When the sync confirmed it gone (ms since epoch). */
  readonly since: number;
}

export interface CloudSyncState {
  readonly passes: number;
  readonly failures: number;
  /** When the last successful pass started its describe (ms since epoch). */
  readonly lastSyncAt: number | null;
  readonly lastError: string | null;
  /** Differences acted on (or, for held addresses, kept and warned about), by kind. */
  readonly differences: Readonly<Record<DifferenceKind | 'eniAdopted', number>>;
  /** Differences seen once, waiting for a later describe to confirm them. */
  readonly unconfirmed: number;
  readonly lostEnis: readonly LostEni[];
  /**
   * What EC2 took away from pods: ENIs it no longer lists as attached while attachments held
   * addresses on them, and the addresses pods held (on those ENIs, or alone: heldAddressMissing).
   */
  readonly takenFromPods: { readonly enis: number; readonly addresses: number };
}

export interface CloudSyncOptions {
  /** The pool's prefixes: a prefix EC2 lists that the pool lacks is learnt with its addresses. */
  readonly prefixes?: PrefixBook;
  /** Registers ENIs the describe lists that the registry does not know (PoolManager's adoption). */
  readonly adopt: (described: readonly EniInfo[]) => Promise<EniInfo[]>;
  /** Runs the pass in line with the pool manager's passes (never two cloud conversations at once). */
  readonly serialized: <T>(work: () => Promise<T>) => Promise<T>;
  readonly intervalMs: number;
  /** How stale a describe may be (ms); see rules 1 and 2 above. */
  readonly staleWindowMs: number;
  readonly retryBaseMs?: number;
  readonly maxBackoffMs?: number;
}

export class CloudSync {
  readonly #p: PoolParts;
  readonly #addresses: PoolAddresses;
  readonly #o: CloudSyncOptions;
  readonly #journal: PoolChangeJournal;
  readonly #loop: PeriodicLoop;
  /** Difference key → when the describe that first showed it started. */
  readonly #pending = new Map<string, number>();
  /** Keys of confirmed held-address differences, already warned about. */
  readonly #heldWarned = new Set<string>();
  #unconfirmed = 0;
  readonly #lost = new Map<string, LostEni>();
  readonly #counts = Object.fromEntries([...DIFFERENCE_KINDS, 'eniAdopted'].map((k) => [k, 0])) as Record<
    DifferenceKind | 'eniAdopted',
    number
  >;
  readonly #takenFromPods = { enis: 0, addresses: 0 };
  #passes = 0;
  #failures = 0;
  #lastSyncAt: number | null = null;
  #lastError: string | null = null;

  constructor(parts: PoolParts, addresses: PoolAddresses, options: CloudSyncOptions) {
    this.#p = parts;
    this.#addresses = addresses;
    this.#o = options;
    this.#journal = new PoolChangeJournal(parts.pool, options.staleWindowMs, parts.clock);
    this.#loop = new PeriodicLoop({
      run: () => this.run(),
      intervalMs: options.intervalMs,
      firstAfterMs: options.intervalMs,
      retryBaseMs: options.retryBaseMs ?? 1000,
      maxBackoffMs: options.maxBackoffMs ?? options.intervalMs,
      unref: true,
      onFailure: (err, failures, retryInMs) =>
        parts.log.warn('cannot compare the pool with EC2; retrying', {
          error: cloudErrorText(err),
          failures,
          retryInMs,
        }),
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** A pool mutation failed: it may have happened in EC2 all the same, so look soon. */
  soon(): void {
    this.#loop.nudge();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One pass, in line with the pool manager's passes. Returns the differences acted on. */
  run(): Promise<Difference[]> {
    return this.#o.serialized(async () => {
      const ended = this.#p.observer?.actionStarted?.('ec2Sync');
      try {
        return await this.#pass();
      } finally {
        ended?.();
      }
    });
  }

  /** The ENI, if the sync confirmed EC2 no longer lists it as attached to this instance. */
  lostEni(eniId: string): LostEni | undefined {
    return this.#lost.get(eniId);
  }

  state(): CloudSyncState {
    return {
      passes: this.#passes,
      failures: this.#failures,
      lastSyncAt: this.#lastSyncAt,
      lastError: this.#lastError,
      differences: { ...this.#counts },
      unconfirmed: this.#unconfirmed,
      lostEnis: [...this.#lost.values()],
      takenFromPods: { ...this.#takenFromPods },
    };
  }

  async #pass(): Promise<Difference[]> {
    const { cloud, metadata, clock, registry, pool } = this.#p;
    const readAt = clock.now();
    let described: EniInfo[];
    try {
      described = await cloud.describeInstanceEnis(metadata.instanceId);
    } catch (err) {
      this.#failures++;
      this.#lastError = cloudErrorText(err);
      throw new Error(`cannot describe the ENIs of ${metadata.instanceId}: ${this.#lastError}`, {
        cause: err,
      });
    }
    // An instance never loses its primary ENI: a describe without it is broken, not the truth.
    if (!described.some((e) => e.deviceNumber === 0)) {
      this.#failures++;
      this.#lastError = `DescribeNetworkInterfaces listed no primary ENI for ${metadata.instanceId}`;
      throw new Error(`${this.#lastError}; not trusted`);
    }
    this.#counts.eniAdopted += (await this.#o.adopt(described)).length;
    const held = this.#addresses.ledgerHeld();
    for (const eniId of this.#lost.keys()) if (!held.enis.has(eniId)) this.#lost.delete(eniId);
    const diffs = compareWithEc2(
      {
        pool,
        ledgerIps: held.ips,
        ledgerEnis: held.enis,
        tracked: (eniId) => registry.get(eniId) !== undefined || this.#lost.has(eniId),
      },
      described,
    );
    const confirmed = this.#confirm(diffs, readAt);
    // Removals first: an address that moved between ENIs joins its new one after leaving the old.
    const order: DifferenceKind[] = [
      'addressRemoved',
      'heldAddressMissing',
      'eniGone',
      'addressAdded',
      'addressUnconfirmed',
    ];
    const acted: Difference[] = [];
    for (const kind of order) {
      for (const d of confirmed.filter((c) => c.kind === kind)) if (await this.#act(d, held)) acted.push(d);
    }
    this.#reportConfirmed(acted, readAt);
    this.#passes++;
    this.#lastSyncAt = readAt;
    this.#lastError = null;
    return acted;
  }

  /** Rules 1 and 2: the differences this describe confirms. */
  #confirm(diffs: readonly Difference[], readAt: number): Difference[] {
    const seen = new Map<string, Difference>();
    for (const d of diffs) {
      const recent =
        d.kind !== 'addressUnconfirmed' &&
        (this.#journal.mayPredate(d.eniId, readAt) ||
          (d.ip !== undefined && this.#journal.mayPredate(d.ip, readAt)));
      if (!recent) seen.set(differenceKey(d), d);
    }
    for (const key of [...this.#pending.keys()]) if (!seen.has(key)) this.#pending.delete(key);
    for (const key of [...this.#heldWarned]) if (!seen.has(key)) this.#heldWarned.delete(key);
    const confirmed: Difference[] = [];
    for (const [key, d] of seen) {
      const first = this.#pending.get(key);
      if (first === undefined) this.#pending.set(key, readAt);
      else if (readAt - first >= this.#o.staleWindowMs) confirmed.push(d);
    }
    this.#unconfirmed = seen.size - confirmed.length;
    return confirmed;
  }

  /** Acts on one confirmed difference, re-checking the pool (ADDs and DELs went on meanwhile). */
  async #act(d: Difference, held: LedgerHeld): Promise<boolean> {
    const { pool, log } = this.#p;
    const ledgerIps = held.ips;
    const state = d.ip === undefined ? undefined : pool.state(d.ip);
    switch (d.kind) {
      case 'addressRemoved': {
        if (d.ip === undefined || !state || state.kind === 'assigned' || ledgerIps.has(d.ip)) return false;
        pool.removeAddresses(d.eniId, [d.ip]);
        log.warn('EC2 no longer lists a free address of the pool; it left the pool', {
          eni: d.eniId,
          ip: d.ip,
        });
        break;
      }
      case 'heldAddressMissing': {
        if (this.#heldWarned.has(differenceKey(d))) return false;
        this.#heldWarned.add(differenceKey(d));
        this.#takenFromPods.addresses++;
        log.warn('EC2 no longer lists an address a pod holds; kept until its DEL (ownership)', {
          eni: d.eniId,
          ip: d.ip,
          owner: state?.kind === 'assigned' ? state.owner : 'ledger',
        });
        break;
      }
      case 'eniGone':
        await this.#dropGoneEni(d.eniId, held.perEni.get(d.eniId) ?? 0);
        break;
      case 'addressUnconfirmed': {
        if (d.ip === undefined || pool.confirm([d.ip]).length === 0) return false;
        this.#addresses.wakeWaiters();
        break;
      }
      case 'addressAdded': {
        if (d.ip === undefined || state !== undefined || !pool.eni(d.eniId)) return false;
        // One path for a lost AssignPrivateIpAddresses reply, whether it asked for IPs or prefixes.
        const book = this.#o.prefixes;
        const newPrefix =
          d.prefix !== undefined && book !== undefined && book.prefixOf(d.eniId, d.ip) === undefined;
        if (newPrefix) book.add(d.eniId, [d.prefix]);
        pool.addAddresses(d.eniId, [d.ip]);
        this.#addresses.restoreAddresses([d.ip]);
        this.#addresses.wakeWaiters();
        if (d.prefix === undefined) {
          log.info('EC2 lists an address the pool did not have; it joined the pool', {
            eni: d.eniId,
            ip: d.ip,
          });
        } else if (newPrefix) {
          log.info('EC2 lists a prefix the pool did not have; its addresses join the pool', {
            eni: d.eniId,
            prefix: d.prefix,
          });
        }
        break;
      }
    }
    this.#counts[d.kind]++;
    return true;
  }

  /** One line per pass for the held-back addresses it let the pool lend, by ENI. */
  #reportConfirmed(acted: readonly Difference[], readAt: number): void {
    const byEni = new Map<string, string[]>();
    for (const d of acted) {
      if (d.kind === 'addressUnconfirmed' && d.ip !== undefined)
        byEni.set(d.eniId, [...(byEni.get(d.eniId) ?? []), d.ip]);
    }
    if (byEni.size === 0) return;
    this.#p.log.info('reads the stale window apart list these addresses on their ENIs; they may be lent', {
      confirmed: Object.fromEntries(byEni),
      readAt,
    });
  }

  /**
   * An ENI EC2 no longer lists as attached leaves the pool with all its addresses. The attachments
   * whose addresses were on it stay in the ledger (ownership: their DELs clean up); CHECK names the
   * ENI (lostEni). A detached ENI vpcnet created is left to the leaked-ENI sweep.
   */
  async #dropGoneEni(eniId: string, ledgerHeldOnIt: number): Promise<void> {
    const { pool, registry, log, links, clock } = this.#p;
    const owners: string[] = [];
    if (pool.eni(eniId)) {
      for (const [ip, s] of pool.addresses(eniId)) {
        if (s.kind !== 'assigned') continue;
        owners.push(s.owner);
        pool.unreserve(ip); // only to let removeEni through: the ENI and its addresses go at once
      }
      pool.removeEni(eniId);
    }
    const heldOnIt = Math.max(owners.length, ledgerHeldOnIt);
    if (heldOnIt > 0) {
      this.#takenFromPods.enis++;
      this.#takenFromPods.addresses += heldOnIt;
    }
    const entry = registry.get(eniId);
    if (entry?.state === 'ready' || entry?.state === 'configuring') registry.gone(eniId);
    this.#lost.set(eniId, { eniId, since: clock.now() });
    log.warn('EC2 no longer lists an ENI as attached to this instance; dropped from the pool', {
      eni: eniId,
      attachmentsOnIt: owners,
    });
    if (!entry?.eni || (entry.state !== 'ready' && entry.state !== 'configuring')) return;
    try {
      await links.onEniDetaching?.(entry.eni);
    } catch (err) {
      log.warn('cannot tear down the link config of a gone ENI', { eni: eniId, error: cloudErrorText(err) });
    }
  }
}
