// When vpcnet itself last changed each ENI and address of the pool (joined or left). EC2 is
// eventually consistent: for a while after vpcnet assigns, unassigns, attaches or frees, a describe
// may still show the old state. The cloud sync ignores what such a describe says about a subject
// vpcnet changed within the stale window, so it cannot lend an address vpcnet just gave back or
// drop one it just got.

import type { AddressPool } from './pool.ts';

export class PoolChangeJournal {
  readonly #windowMs: number;
  readonly #now: () => number;
  /** ENI ID or address → when vpcnet last changed it (ms). */
  readonly #changedAt = new Map<string, number>();

  constructor(pool: AddressPool, windowMs: number, clock: { now(): number }) {
    this.#windowMs = windowMs;
    this.#now = () => clock.now();
    pool.observeMembership((eniId, ips, wholeEni) => this.record(wholeEni ? [eniId, ...ips] : ips));
  }

  record(subjects: readonly string[]): void {
    const now = this.#now();
    for (const s of subjects) this.#changedAt.set(s, now);
    for (const [s, at] of this.#changedAt) if (at < now - 2 * this.#windowMs) this.#changedAt.delete(s); // reads start before now
  }

  /**
   * Whether a describe that started at `readAt` may still show a subject as it was before vpcnet
   * last changed it (a change in the stale window before the read, or after it).
   */
  mayPredate(subject: string, readAt: number): boolean {
    const at = this.#changedAt.get(subject);
    return at !== undefined && at > readAt - this.#windowMs;
  }
}
