// What EC2 says about this node's trunk: the branch ENIs associated with it, under which VLAN IDs,
// and each branch ENI's MAC, address and subnet. A pod's vpc.amazonaws.com/pod-eni annotation is
// only a claim (anyone who may write pods may write one); this is what it is checked against
// (docs/design.md, Trust boundaries).
//
// Cached per trunk: one DescribeTrunkInterfaceAssociations answers every pod whose branch ENI was
// associated before it, so a burst of pod starts costs one read. A claim the cache cannot confirm
// reads again, but misses coalesce: at most one read per trunk is in flight, and miss-driven reads
// are spaced by `minReadGapMs`, so pods with forged annotations cannot make the agent spend its
// EC2 budget. An answer older than `maxAgeMs` is read again before it confirms anything.
import type { BranchEniFacts, Cloud } from '../../cloud/cloud.ts';

/** A branch ENI as EC2 shows it on a trunk. */
export interface TrunkBranch extends BranchEniFacts {
  readonly trunkEniId: string;
  readonly vlanId: number;
}

export interface TrunkFactsSource {
  /**
   * EC2's facts of branch ENI `eniId` if EC2 shows it associated with trunk `trunkEniId`, else
   * undefined. `fresh`: from a read that started after this call (a decision that takes something
   * from another pod never rests on a cached answer).
   */
  branch(
    trunkEniId: string,
    eniId: string,
    opts?: { readonly fresh?: boolean },
  ): Promise<TrunkBranch | undefined>;
}

export interface TrunkFactsDeps {
  readonly cloud: Pick<Cloud, 'describeTrunkAssociations' | 'describeBranchEnis'>;
  /** Monotonic milliseconds. */
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly minReadGapMs?: number;
  readonly maxAgeMs?: number;
}

interface TrunkRead {
  /** When the read began (monotonic ms): it knows what EC2 knew then. */
  readonly startedAt: number;
  readonly branches: ReadonlyMap<string, TrunkBranch>;
}

const MIN_READ_GAP_MS = 1000;
const MAX_AGE_MS = 60_000;

export class TrunkFacts implements TrunkFactsSource {
  readonly #d: TrunkFactsDeps;
  readonly #gapMs: number;
  readonly #maxAgeMs: number;
  readonly #last = new Map<string, TrunkRead>();
  readonly #pending = new Map<string, { readonly startsAt: number; readonly read: Promise<TrunkRead> }>();
  /** Branch ENIs' own facts never change; kept while the ENI is on a trunk. */
  readonly #enis = new Map<string, BranchEniFacts>();
  /** Reads of EC2 made (each one DescribeTrunkInterfaceAssociations, plus a describe of new ENIs). */
  reads = 0;

  constructor(deps: TrunkFactsDeps) {
    this.#d = deps;
    this.#gapMs = deps.minReadGapMs ?? MIN_READ_GAP_MS;
    this.#maxAgeMs = deps.maxAgeMs ?? MAX_AGE_MS;
  }

  async branch(
    trunkEniId: string,
    eniId: string,
    opts: { fresh?: boolean } = {},
  ): Promise<TrunkBranch | undefined> {
    const asked = this.#d.now();
    const last = this.#last.get(trunkEniId);
    const usable = last !== undefined && !opts.fresh && asked - last.startedAt <= this.#maxAgeMs;
    const hit = usable ? last.branches.get(eniId) : undefined;
    if (hit) return hit;
    // A read already under way began before this question; in a burst it most often knows the
    // answer already. What it does not confirm, a read begun after the question decides.
    const underway = this.#pending.get(trunkEniId);
    if (underway && underway.startsAt < asked && !opts.fresh) {
      const found = (await underway.read).branches.get(eniId);
      if (found) return found;
    }
    return (await this.#readSince(trunkEniId, asked)).branches.get(eniId);
  }

  /** A read of the trunk that started at or after `since`: one done, in flight or due is shared. */
  #readSince(trunkEniId: string, since: number): Promise<TrunkRead> {
    const last = this.#last.get(trunkEniId);
    if (last && last.startedAt >= since) return Promise.resolve(last);
    const pending = this.#pending.get(trunkEniId);
    if (pending && pending.startsAt >= since) return pending.read;
    const startsAt = Math.max(since, last === undefined ? since : last.startedAt + this.#gapMs);
    const read = (async () => {
      const wait = startsAt - this.#d.now();
      if (wait > 0) await this.#d.sleep(wait);
      return this.#read(trunkEniId);
    })().finally(() => {
      if (this.#pending.get(trunkEniId)?.read === read) this.#pending.delete(trunkEniId);
    });
    this.#pending.set(trunkEniId, { startsAt, read });
    return read;
  }

  async #read(trunkEniId: string): Promise<TrunkRead> {
    const startedAt = this.#d.now();
    this.reads++;
    const associations = await this.#d.cloud.describeTrunkAssociations(trunkEniId);
    const unknown = associations.map((a) => a.branchEniId).filter((id) => !this.#enis.has(id));
    if (unknown.length > 0) {
      for (const facts of await this.#d.cloud.describeBranchEnis(unknown)) this.#enis.set(facts.eniId, facts);
    }
    const branches = new Map<string, TrunkBranch>();
    for (const a of associations) {
      const facts = this.#enis.get(a.branchEniId);
      // An association whose ENI EC2 no longer describes confirms nothing.
      if (facts) branches.set(a.branchEniId, { ...facts, trunkEniId: a.trunkEniId, vlanId: a.vlanId });
    }
    const read: TrunkRead = { startedAt, branches };
    const previous = this.#last.get(trunkEniId);
    if (previous === undefined || previous.startedAt <= startedAt) this.#last.set(trunkEniId, read);
    this.#forgetUnassociated();
    return read;
  }

  /** ENI facts are kept only for ENIs some trunk's last read still lists. */
  #forgetUnassociated(): void {
    const listed = new Set([...this.#last.values()].flatMap((r) => [...r.branches.keys()]));
    for (const id of this.#enis.keys()) if (!listed.has(id)) this.#enis.delete(id);
  }
}
