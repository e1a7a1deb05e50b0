// The cluster's EC2 throttle signal, on one coordination.k8s.io/v1 Lease: EC2 limits requests per
// account with a bucket per action that every agent of the cluster draws from, so an agent that
// learns of throttling only from its own RequestLimitExceeded learns too late (at 1,000 nodes
// each agent would be throttled a dozen times before its share was right). Here the first agent
// that EC2 throttles on an action writes "held until T, pace ×F" for it on the Lease; the others
// read the Lease at a jittered interval and right after a throttle of their own, and write only
// when it does not already say as much, so a throttled minute costs the API server one write per
// action and round, and one read per agent and interval.
//
// What an agent does with it (the EC2 budget, src/cloud/ec2-budget.ts): while an action is held,
// its calls that no pod waits for (top-ups, describes, sweeps, releases) wait; and at all times
// they are paced to the agent's share of the bucket's refill: an interval of
// agents × F / (refill × BACKGROUND_SHARE) between one agent's calls of the action, where `agents`
// is the count of nodes running the agent (the DaemonSet's desiredNumberScheduled), so that the
// whole cluster's background calls stay under half of what EC2 refills and the other half is left
// for the calls pods wait for. F doubles once in each round of throttling in which a paced call
// was throttled (EC2's limits may be below its published ones, or halved), and halves back every
// FACTOR_HALF_LIFE_MS after the hold.
import type { LeaseRecord, Leases, StoredLease } from './lease.ts';

/** The Lease's annotation holding the per-action records, as JSON. */
export const THROTTLE_ANNOTATION = 'vpcnet.io/ec2-throttle';

/** Share of an action's refill the cluster's background calls may use; the rest is for demand. */
export const BACKGROUND_SHARE = 0.5;
const MAX_FACTOR = 64;
/**
 * Mean interval between a starting agent's reads of the Lease (jittered ±50%): its start's calls
 * are not paced, and nodes replaced together start together, so each must learn of a hold within a
 * couple of seconds rather than 15 (100 starting nodes: 50 reads/s while they start).
 */
const STARTING_READ_EVERY_MS = 2000;
const FACTOR_HALF_LIFE_MS = 30_000;

/** One action's record on the Lease (wall-clock ms since the epoch). */
export interface ActionThrottle {
  /** When an agent was last throttled on it (as written). */
  readonly at: number;
  /** Its calls no pod waits for wait until then. */
  readonly until: number;
  /** The pace's multiplier (≥ 1) as written at `at`; it decays after `until`. */
  readonly factor: number;
  /** This round already doubled the factor (so another agent's throttle in it does not again). */
  readonly doubled?: true;
}

export type ThrottleRecords = Readonly<Record<string, ActionThrottle>>;

export interface Ec2ThrottleLeaseDeps {
  readonly leases: Leases;
  /** The agent's node name (the Lease's holderIdentity names the last writer). */
  readonly identity: string;
  /** Wall clock, ms since the epoch (the Lease is shared by machines). */
  readonly now: () => number;
  readonly random: () => number;
  /** The nodes running the agent (the DaemonSet's count); undefined when it cannot be read. */
  readonly agents: () => Promise<number | undefined>;
  /** EC2's refill per second of an action's bucket (its published limits). */
  readonly refillPerSecond: (action: string) => number;
  readonly log: {
    warn(msg: string, fields?: Record<string, unknown>): void;
    info(msg: string, fields?: Record<string, unknown>): void;
  };
  /** Mean interval between reads of the Lease (default 15 s, jittered ±50%). */
  readonly readEveryMs?: number;
  /** Mean interval between reads of the Lease while the agent starts (default 2 s, jittered ±50%). */
  readonly startingReadEveryMs?: number;
  /** Mean interval between reads of the agent count (default 5 minutes, jittered). */
  readonly agentsEveryMs?: number;
  /** How long a throttle holds the action's background calls (default 5 s). */
  readonly holdMs?: number;
}

/** The records of the Lease's annotation; what is not one is left out (another version wrote it). */
export function parseThrottleRecords(text: string | undefined): Record<string, ActionThrottle> {
  const out: Record<string, ActionThrottle> = {};
  if (text === undefined) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return out;
  }
  if (typeof parsed !== 'object' || parsed === null) return out;
  for (const [action, v] of Object.entries(parsed as Record<string, unknown>)) {
    const r = v as Partial<ActionThrottle> | null;
    if (typeof r !== 'object' || r === null) continue;
    const { at, until, factor, doubled } = r;
    if (typeof at === 'number' && typeof until === 'number' && typeof factor === 'number' && factor >= 1)
      out[action] = {
        at,
        until,
        factor: Math.min(MAX_FACTOR, factor),
        ...(doubled === true ? { doubled } : {}),
      };
  }
  return out;
}

/** The pace's multiplier of `r` at `now`: as written until the hold ends, then halving. */
export function factorAt(r: ActionThrottle | undefined, now: number): number {
  if (r === undefined) return 1;
  const after = Math.max(0, now - r.until);
  return Math.max(1, r.factor * 2 ** (-after / FACTOR_HALF_LIFE_MS));
}

export class Ec2ThrottleLease {
  readonly #d: Ec2ThrottleLeaseDeps;
  readonly #holdMs: number;
  #records: Record<string, ActionThrottle> = {};
  #agents: number | undefined;
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopped = false;
  /** The agent is starting (starting()), and its frequent reads run. */
  #starting = false;
  #readingOften = false;
  /** Per action, its throttle being told to the Lease (one read-then-write at a time each). */
  readonly #telling = new Map<string, Promise<void>>();
  reads = 0;
  writes = 0;

  constructor(deps: Ec2ThrottleLeaseDeps) {
    this.#d = deps;
    this.#holdMs = deps.holdMs ?? 5000;
  }

  /** Reads the agent count and the Lease once, then keeps reading them in the background. */
  async start(): Promise<void> {
    await Promise.all([this.#readAgents(), this.#read()]);
    this.#repeat(this.#d.readEveryMs ?? 15_000, () => this.#read());
    this.#repeat(this.#d.agentsEveryMs ?? 300_000, () => this.#readAgents());
  }

  /** While the agent starts, the Lease is read every ~2 s, not every ~15 s (STARTING_READ_EVERY_MS). */
  starting(yes: boolean): void {
    this.#starting = yes;
    if (yes && !this.#readingOften) this.#readOften();
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /** The nodes sharing EC2's buckets, as last read (1 when unknown: the agent's own share). */
  get agents(): number {
    return this.#agents ?? 1;
  }

  /** The records as last read or written. */
  records(): ThrottleRecords {
    return this.#records;
  }

  intervalMs(action: string): number {
    const refill = this.#d.refillPerSecond(action);
    if (!(refill > 0)) return 0;
    const factor = factorAt(this.#records[action], this.#d.now());
    return (this.agents * factor * 1000) / (refill * BACKGROUND_SHARE);
  }

  heldForMs(action: string): number {
    const r = this.#records[action];
    return r === undefined ? 0 : Math.max(0, r.until - this.#d.now());
  }

  throttledWithin(withinMs: number): boolean {
    const since = this.#d.now() - withinMs;
    return Object.values(this.#records).some((r) => r.at >= since);
  }

  /** EC2 throttled this agent on `action`: read the Lease now, and write the hold if it lacks it. */
  throttled(action: string, paced: boolean): void {
    if (this.#telling.has(action) || this.#stopped) return;
    const telling = this.#tell(action, paced)
      .catch((err: unknown) =>
        this.#d.log.warn('cannot write the EC2 throttle Lease; this agent slows down alone', {
          action,
          error: err instanceof Error ? err.message : String(err),
        }),
      )
      .finally(() => this.#telling.delete(action));
    this.#telling.set(action, telling);
  }

  /** Resolves once every throttle told so far has been read or written on the Lease. */
  async told(): Promise<void> {
    await Promise.all(this.#telling.values());
  }

  async #tell(action: string, paced: boolean): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.#readLease();
      const now = this.#d.now();
      const r = this.#records[action];
      // A paced call throttled: the pace is too fast for the account (its limits are below the
      // published ones, or other clients use them, or EC2 lowered them). A herd of calls pods or
      // starting agents waited for is not that: it holds the action but leaves the pace.
      const slower = paced;
      // Already said by another agent (the hold still lasts at least half of its length), and
      // doubled in this round if a paced call was throttled in it: nothing to write. (A round
      // begun by a pod's call is doubled by the first paced call throttled in it.)
      const fresh = r !== undefined && r.until - now >= this.#holdMs / 2;
      if (fresh && (!slower || r.doubled === true)) return;
      const next: ActionThrottle = {
        at: now,
        until: now + this.#holdMs,
        factor: Math.min(MAX_FACTOR, Math.round(factorAt(r, now) * (slower ? 2 : 1) * 100) / 100),
        ...(slower ? { doubled: true as const } : {}),
      };
      const records = { ...this.#records, [action]: next };
      const record: LeaseRecord = {
        holder: this.#d.identity,
        leaseDurationSeconds: Math.ceil(this.#holdMs / 1000),
        acquireTime: current?.acquireTime,
        renewTime: new Date(now).toISOString().replace(/Z$/, '000Z'),
        transitions: current?.transitions ?? 0,
        annotations: { ...current?.annotations, [THROTTLE_ANNOTATION]: JSON.stringify(records) },
      };
      this.writes++;
      const written =
        current === undefined
          ? await this.#d.leases.create(record)
          : await this.#d.leases.update(current.resourceVersion, record);
      if (written === 'taken' || written === 'conflict') continue; // another agent wrote: read again
      this.#took(written);
      this.#d.log.info('EC2 throttled this agent: the cluster holds and paces the action', {
        action,
        holdMs: this.#holdMs,
        factor: next.factor,
        agents: this.agents,
      });
      return;
    }
  }

  async #read(): Promise<void> {
    try {
      await this.#readLease();
    } catch {
      // The last records stand until a read succeeds; the agent's own AIMD still works.
    }
  }

  async #readLease(): Promise<StoredLease | undefined> {
    this.reads++;
    const lease = await this.#d.leases.read();
    if (lease !== undefined) this.#took(lease);
    return lease;
  }

  #took(lease: StoredLease): void {
    this.#records = parseThrottleRecords(lease.annotations[THROTTLE_ANNOTATION]);
  }

  async #readAgents(): Promise<void> {
    try {
      const n = await this.#d.agents();
      if (n !== undefined && n >= 1) this.#agents = n;
    } catch {
      // The last count stands.
    }
  }

  #readOften(): void {
    this.#readingOften = !this.#stopped && this.#starting;
    if (!this.#readingOften) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        void this.#read().finally(() => this.#readOften());
      },
      (this.#d.startingReadEveryMs ?? STARTING_READ_EVERY_MS) * (0.5 + this.#d.random()),
    );
    timer.unref();
    this.#timers.add(timer);
  }

  /** Runs `work` again and again, a jittered `meanMs` (±50%) after each run ended, until stop(). */
  #repeat(meanMs: number, work: () => Promise<void>): void {
    if (this.#stopped) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        void work().finally(() => this.#repeat(meanMs, work));
      },
      meanMs * (0.5 + this.#d.random()),
    );
    timer.unref(); // the agent's own work keeps the process; this only reads
    this.#timers.add(timer);
  }
}
