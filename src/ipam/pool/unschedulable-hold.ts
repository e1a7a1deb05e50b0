// AWS_MANAGE_ENIS_NON_SCHEDULABLE=false, as upstream: on an unschedulable (cordoned) node the pool
// adds no address or ENI and frees no ENI; giving back free addresses goes on. The node is asked
// about only when a pass would make such a change; an API that cannot answer counts as
// schedulable, as upstream's does.
import { cloudErrorText } from '../cloud-sync/cloud-error-text.ts';
import type { PoolLog } from './pool-parts.ts';

export const UNSCHEDULABLE_REASON =
  'the node is unschedulable (taint node.kubernetes.io/unschedulable:NoSchedule): no address or ENI is added, and no ENI freed, until it is schedulable again';

/** The decisions a cordoned node holds back. */
const HELD_KINDS: ReadonlySet<string> = new Set(['assign', 'attachEni', 'freeEni']);

export class UnschedulableHold {
  readonly #ask: (() => Promise<boolean>) | undefined;
  readonly #log: PoolLog;
  readonly #now: () => number;
  #since: number | undefined;

  constructor(ask: (() => Promise<boolean>) | undefined, log: PoolLog, clock: { now(): number }) {
    this.#ask = ask;
    this.#log = log;
    this.#now = () => clock.now();
  }

  /** Since when passes hold back a change (ms), or undefined when the last pass held nothing. */
  get since(): number | undefined {
    return this.#since;
  }

  /** Whether a decision of `kind` is held back now; a pass that holds nothing ends the hold. */
  async holds(kind: string): Promise<boolean> {
    if (this.#ask === undefined || !HELD_KINDS.has(kind)) {
      this.#since = undefined;
      return false;
    }
    const unschedulable = await this.#ask().catch((err: unknown) => {
      this.#log.warn('cannot tell whether the node is unschedulable; managing its ENIs', {
        error: cloudErrorText(err),
      });
      return false;
    });
    if (!unschedulable) {
      this.#since = undefined;
      return false;
    }
    if (this.#since === undefined) {
      this.#since = this.#now();
      this.#log.warn(
        'the node is unschedulable: the pool adds no address or ENI, and frees no ENI, meanwhile',
        {
          heldBack: kind,
        },
      );
    }
    return true;
  }
}
