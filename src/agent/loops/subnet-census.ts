// The cluster's subnet census (docs/design.md, "Capacity"): one agent per cluster, elected on a
// Lease, reads EC2 for every subnet the cluster's agents need (one GetSubnetCidrReservations and
// one DescribeNetworkInterfaces page per subnet per census period) and publishes the result on the
// Lease; every other agent reads it from there instead of describing EC2 itself. Each agent adds
// the subnets it needs to the Lease's wanted list; the leader censuses those. The census is on the
// Lease rather than in a ConfigMap: one object and one rule in the agent's Role, no right to write
// ConfigMaps in kube-system (which hold aws-auth), and a reader gets who leads and the census in
// one GET.
import { type Cloud, CloudError } from '../../cloud/cloud.ts';
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { SelfTimedLoop } from '../../infra/self-timed-loop.ts';
import { takeCensus } from '../../ipam/census/census-reading.ts';
import type { SubnetCensusSource } from '../../ipam/census/census-source.ts';
import {
  CENSUS_ANNOTATION,
  decodeCensus,
  decodeWanted,
  encodeCensus,
  encodeWanted,
  WANTED_ANNOTATION,
  type WantedSubnet,
} from '../../ipam/census/census-wire.ts';
import { CensusView, type SubnetCensus } from '../../ipam/census/subnet-census.ts';
import type { AnnotationChange, ElectionRound } from '../../pods/lease/lease-election.ts';

export interface CensusElection {
  readonly identity: string;
  round(change?: AnnotationChange): Promise<ElectionRound>;
  amend(change: AnnotationChange): Promise<boolean>;
}

export interface CensusTiming {
  /** A subnet's census is taken again once it is this old (5 min). */
  readonly periodMs: number;
  /** The leader's rounds (renewals): well inside the lease duration. */
  readonly leaderRoundMs: number;
  /** Other agents read the Lease this often (jittered ±20 %); at the leader's pace while a subnet they asked for has no census yet. */
  readonly followerRoundMs: number;
  /** A census older than this is not acted on (the leader is gone and nobody took over yet). */
  readonly staleMs: number;
  /** An agent asks again for a subnet it still needs this often, so the leader keeps it. */
  readonly askAgainMs: number;
  /** A subnet nobody asked for this long is no longer censused. */
  readonly forgetMs: number;
}

/**
 * How long the census Lease holds without a renewal: six leader rounds, so a leader that misses a
 * few (a slow API) keeps it, and one that died is replaced within 90 s plus a follower's round.
 */
export const CENSUS_LEASE_DURATION_MS = 90_000;

export const DEFAULT_CENSUS_TIMING: CensusTiming = {
  periodMs: 5 * 60_000,
  leaderRoundMs: 15_000,
  followerRoundMs: 60_000,
  staleMs: 15 * 60_000,
  askAgainMs: 12 * 3600_000,
  forgetMs: 24 * 3600_000,
};

export interface SubnetCensusDeps {
  readonly election: CensusElection;
  readonly cloud: Cloud;
  readonly log: Logger;
  /** Wall clock, ms since epoch. */
  readonly now: () => number;
  readonly timing?: Partial<CensusTiming>;
  /** Whether placement and /32 assignment use the census, or it is only reported. */
  readonly places: boolean;
  /** [0,1) for the followers' jitter and the dense picks' spread; default Math.random. */
  readonly random?: () => number;
  /** Told of every census this agent took itself (metrics: EC2 reads per subnet). */
  readonly took?: (census: SubnetCensus) => void;
}

export interface SubnetCensusState {
  readonly role: 'leader' | 'follower' | 'unknown';
  readonly lastError?: string;
  readonly subnets: readonly {
    readonly subnetId: string;
    readonly cidr: string;
    readonly takenAt: string;
    readonly freePrefixes: number;
    readonly freeAddresses: number;
    readonly reservationsKnown: boolean;
    readonly stale: boolean;
  }[];
}

export class SubnetCensusLoop implements SubnetCensusSource {
  readonly #d: SubnetCensusDeps;
  readonly #t: CensusTiming;
  readonly #random: () => number;
  /** The newest census known per subnet, with its view (parsed once). */
  readonly #known = new Map<string, CensusView>();
  /** Subnets this agent needs, with when it last told the leader (0: not yet). */
  readonly #mine = new Map<string, { cidr: string; toldAt: number }>();
  #role: SubnetCensusState['role'] = 'unknown';
  #lastError: string | undefined;
  readonly #loop = new SelfTimedLoop(() => this.round());

  constructor(deps: SubnetCensusDeps) {
    this.#d = deps;
    this.#t = { ...DEFAULT_CENSUS_TIMING, ...deps.timing };
    this.#random = deps.random ?? Math.random;
  }

  get places(): boolean {
    return this.#d.places;
  }

  /** The pool's named picks draw on it too: a seeded loop makes a simulated cluster replay exactly. */
  get random(): () => number {
    return this.#random;
  }

  view(subnetId: string): CensusView | undefined {
    const v = this.#known.get(subnetId);
    if (v === undefined || v.census.takenAt <= this.#d.now() - this.#t.staleMs) return undefined;
    return v;
  }

  want(subnetId: string, cidr: string): void {
    if (!this.#mine.has(subnetId)) this.#mine.set(subnetId, { cidr, toldAt: 0 });
  }

  /** Every census this agent knows, fresh or not (metrics, `vpcnetctl status`). */
  views(): CensusView[] {
    return [...this.#known.values()];
  }

  state(): SubnetCensusState {
    const now = this.#d.now();
    return {
      role: this.#role,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
      subnets: [...this.#known.values()].map((v) => ({
        subnetId: v.census.subnetId,
        cidr: v.census.cidr,
        takenAt: new Date(v.census.takenAt).toISOString(),
        ...v.figures(),
        reservationsKnown: v.census.reservationsKnown,
        stale: v.census.takenAt <= now - this.#t.staleMs,
      })),
    };
  }

  start(): void {
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
  }

  /** One round; resolves with the wait before the next. Never throws: a failure is logged once. */
  async round(): Promise<number> {
    try {
      const first = await this.#d.election.round();
      this.#learn(first);
      if (first.leading) await this.#lead(first);
      else await this.#ask(first);
      this.#settled();
    } catch (err) {
      this.#failed(err);
    }
    if (this.#role === 'leader') return this.#t.leaderRoundMs;
    // A subnet this agent asked for has no census yet: the leader takes it at its next round, so
    // look again as soon as that may have happened, not a whole follower round later.
    const awaiting = [...this.#mine.keys()].some((id) => !this.#known.has(id));
    return (awaiting ? this.#t.leaderRoundMs : this.#t.followerRoundMs) * (0.8 + 0.4 * this.#random());
  }

  /** What the Lease says: who leads, the censuses published (newer than what this agent has). */
  #learn(round: ElectionRound): void {
    if (round.lease === undefined) return;
    this.#role = round.leading ? 'leader' : 'follower';
    const { censuses, rejected } = decodeCensus(round.lease.annotations[CENSUS_ANNOTATION]);
    if (rejected.length > 0)
      this.#d.log.warn('subnet census: entries of the Lease are not a census; ignored', { rejected });
    for (const c of censuses) {
      const have = this.#known.get(c.subnetId);
      if (have === undefined || have.census.takenAt < c.takenAt)
        this.#known.set(c.subnetId, new CensusView(c));
    }
  }

  /** The leader: census every wanted subnet whose census is due, and publish on the Lease. */
  async #lead(round: ElectionRound): Promise<void> {
    const now = this.#d.now();
    const read = decodeWanted(round.lease?.annotations[WANTED_ANNOTATION]);
    const wanted = new Map(read);
    for (const [subnetId, m] of this.#mine) wanted.set(subnetId, { cidr: m.cidr, askedAt: now });
    const dropped = new Set<string>();
    for (const [id, w] of wanted) if (w.askedAt <= now - this.#t.forgetMs) dropped.add(id);
    let taken = 0;
    for (const [subnetId, w] of wanted) {
      if (dropped.has(subnetId)) continue;
      const have = this.#known.get(subnetId);
      if (have !== undefined && have.census.takenAt > now - this.#t.periodMs) continue;
      const outcome = await this.#take(subnetId, w);
      if (outcome === 'gone') dropped.add(subnetId);
      if (outcome !== 'failed') taken++;
    }
    for (const m of this.#mine.values()) m.toldAt = now;
    const newKeys = [...this.#mine.keys()].some((id) => !read.has(id));
    if (taken === 0 && dropped.size === 0 && !newKeys) return;
    for (const id of dropped) this.#known.delete(id);
    // Applied to the Lease as it is at the write: a subnet another agent asked for meanwhile stays.
    const written = await this.#d.election.round((a) => {
      const merged = decodeWanted(a[WANTED_ANNOTATION]);
      for (const [id, w] of wanted)
        if (!merged.has(id) || merged.get(id)!.askedAt < w.askedAt) merged.set(id, w);
      for (const id of dropped) merged.delete(id);
      const published = [...this.#known.values()].map((v) => v.census).filter((c) => merged.has(c.subnetId));
      return {
        ...a,
        [CENSUS_ANNOTATION]: encodeCensus(published),
        [WANTED_ANNOTATION]: encodeWanted(merged),
      };
    });
    if (!written.leading)
      this.#d.log.info('subnet census: lost the Lease before publishing; the new leader censuses');
    this.#learn(written);
  }

  /** Takes one subnet's census: taken, gone (EC2 no longer knows the subnet) or failed (tried again). */
  async #take(subnetId: string, w: WantedSubnet): Promise<'taken' | 'gone' | 'failed'> {
    try {
      const census = await takeCensus(this.#d.cloud, { subnetId, cidr: w.cidr }, this.#d.now(), this.#d.log);
      this.#known.set(subnetId, new CensusView(census));
      this.#d.took?.(census);
      return 'taken';
    } catch (err) {
      if (err instanceof CloudError && err.code === 'InvalidSubnetID.NotFound') {
        this.#d.log.warn('subnet census: EC2 no longer knows a wanted subnet; it is dropped', {
          subnet: subnetId,
        });
        return 'gone';
      }
      this.#d.log.warn('subnet census: cannot read EC2 for a subnet; the next round tries again', {
        subnet: subnetId,
        error: errorText(err),
      });
      return 'failed';
    }
  }

  /** Another agent leads: ask it for the subnets this agent needs that it does not census yet. */
  async #ask(round: ElectionRound): Promise<void> {
    const now = this.#d.now();
    const listed = decodeWanted(round.lease?.annotations[WANTED_ANNOTATION]);
    const missing = [...this.#mine].filter(
      ([id, m]) => !listed.has(id) || m.toldAt <= now - this.#t.askAgainMs,
    );
    if (missing.length === 0 || round.lease === undefined) return;
    const told = await this.#d.election.amend((a) => {
      const wanted = decodeWanted(a[WANTED_ANNOTATION]);
      for (const [id, m] of missing) wanted.set(id, { cidr: m.cidr, askedAt: now });
      return { ...a, [WANTED_ANNOTATION]: encodeWanted(wanted) };
    });
    if (told) for (const [, m] of missing) m.toldAt = now;
  }

  #settled(): void {
    if (this.#lastError === undefined) return;
    this.#d.log.info('subnet census: the Kubernetes API answers again', { role: this.#role });
    this.#lastError = undefined;
  }

  #failed(err: unknown): void {
    const text = errorText(err);
    // Logged when it changes: an API down for an hour is one line, not one per round.
    if (text !== this.#lastError) {
      this.#d.log.warn(
        'subnet census: a round failed; pods are placed on the last census while it is fresh',
        {
          error: text,
          hint: 'the agent needs get, create and update on its census Lease (deploy/base/role.yaml)',
        },
      );
    }
    this.#lastError = text;
  }
}
