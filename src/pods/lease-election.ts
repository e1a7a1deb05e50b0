// Leader election on one Lease, as client-go's leaderelection does it: a candidate takes the Lease
// when it is missing or its holder has not renewed it for a whole lease duration, the holder renews
// it every round, and every write names the resourceVersion it read, so of two candidates acting
// on one read only one write succeeds. Expiry is judged on this agent's own monotonic clock (when
// it last saw the holder renew), never on the renewTime another machine wrote: clock skew between
// nodes cannot make a live leader look dead. Writes that change only annotations (agents adding
// their requests) do not count as a renewal.
import type { LeaseRecord, Leases, StoredLease } from './lease.ts';

export interface LeaseElectionDeps {
  readonly leases: Leases;
  /** This agent (its node name): the Lease's holderIdentity while it leads. */
  readonly identity: string;
  readonly leaseDurationMs: number;
  /** Wall clock (ms since epoch) for the times written into the Lease. */
  readonly now: () => number;
  /** A clock that never steps back (ms), for expiry. */
  readonly monotonic: () => number;
}

export type AnnotationChange = (current: Readonly<Record<string, string>>) => Record<string, string>;

export interface ElectionRound {
  readonly leading: boolean;
  /** The Lease as the round left it (undefined only when it could not be read or made). */
  readonly lease: StoredLease | undefined;
}

/** RFC 3339 with microseconds, as a MicroTime field is written. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

export class LeaseElection {
  readonly #d: LeaseElectionDeps;
  /** The holder and renewTime last seen, and when (monotonic) they were first seen so. */
  #observed: { holder: string | undefined; renewTime: string | undefined; at: number } | undefined;

  constructor(deps: LeaseElectionDeps) {
    this.#d = deps;
  }

  get identity(): string {
    return this.#d.identity;
  }

  /**
   * One round: take or renew the Lease when this agent may, with `change` applied to its
   * annotations in the same write (what a leader publishes). A conflict is answered by reading
   * again, a few times: another agent's write of annotations must not cost the leader its round.
   */
  async round(change?: AnnotationChange): Promise<ElectionRound> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.#d.leases.read();
      if (current === undefined) {
        const made = await this.#d.leases.create(this.#record(undefined, change));
        if (made === 'taken') continue;
        this.#observe(made);
        return { leading: true, lease: made };
      }
      this.#observe(current);
      if (current.holder !== this.#d.identity && !this.#expired()) return { leading: false, lease: current };
      const written = await this.#d.leases.update(current.resourceVersion, this.#record(current, change));
      if (written === 'conflict') continue;
      this.#observe(written);
      return { leading: true, lease: written };
    }
    return { leading: false, lease: undefined };
  }

  /**
   * Changes the Lease's annotations without touching who holds it (an agent asking the leader for
   * something); false when another writer kept winning. Needs the Lease to exist.
   */
  async amend(change: AnnotationChange): Promise<boolean> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await this.#d.leases.read();
      if (current === undefined) return false;
      this.#observe(current);
      const next: LeaseRecord = { ...current, annotations: change(current.annotations) };
      if ((await this.#d.leases.update(current.resourceVersion, next)) !== 'conflict') return true;
    }
    return false;
  }

  /** The record this agent writes to hold the Lease (taking it over counts a transition). */
  #record(current: StoredLease | undefined, change: AnnotationChange | undefined): LeaseRecord {
    const now = microTime(this.#d.now());
    const takingOver = current?.holder !== this.#d.identity;
    const annotations = current?.annotations ?? {};
    return {
      holder: this.#d.identity,
      leaseDurationSeconds: Math.ceil(this.#d.leaseDurationMs / 1000),
      acquireTime: takingOver ? now : (current?.acquireTime ?? now),
      renewTime: now,
      transitions: (current?.transitions ?? 0) + (takingOver && current?.holder !== undefined ? 1 : 0),
      annotations: change === undefined ? { ...annotations } : change(annotations),
    };
  }

  #observe(lease: StoredLease): void {
    const seen = this.#observed;
    if (seen !== undefined && seen.holder === lease.holder && seen.renewTime === lease.renewTime) return;
    this.#observed = { holder: lease.holder, renewTime: lease.renewTime, at: this.#d.monotonic() };
  }

  /** The holder has not renewed for a whole lease duration, as this agent saw it. */
  #expired(): boolean {
    const seen = this.#observed;
    if (seen?.holder === undefined) return true;
    return seen.at + this.#d.leaseDurationMs <= this.#d.monotonic();
  }
}
