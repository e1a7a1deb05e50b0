// A regular pod's SNAT element leaves after its DEL has answered, together with the elements of
// the other DELs of the moment. Deleting an nftables element commits a transaction that waits for
// an RCU grace period (~13 ms measured on this kernel, as long as the veth's own deletion), and the
// node's transactions run one at a time: a DEL that waited for its own element paid that wait
// again, and a burst of 50 DELs paid it 50 times in a row. Here one removal is in flight at a time
// and takes every element queued meanwhile (the netlink helper makes them one transaction).
//
// Ownership holds: until its element is gone the address stays assigned in the pool (the caller
// releases it afterwards), so no other pod can be given it and lose its element to this removal.
// After a crash the element belongs to no record: the reconcile pass collects it, and a pod that
// got the address meanwhile owns the element it added.
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import type { Resource } from '../plan/resource.ts';

export interface SnatReleaseDeps {
  /** Removes the resources (what is already gone counts as removed); throws what could not be. */
  readonly remove: (resources: readonly Resource[]) => Promise<void>;
  readonly log: Logger;
  /** First wait after a failed removal, doubled per failure up to 30 s. */
  readonly retryMs?: number;
}

interface Waiting {
  readonly ip: string;
  readonly done: () => void;
}

const MAX_RETRY_MS = 30_000;

export class SnatRelease {
  readonly #deps: SnatReleaseDeps;
  #queue: Waiting[] = [];
  #running: Promise<void> | undefined;
  #failures = 0;
  /** What each DEL left to do, by the owner key of the address it still holds. */
  readonly #byOwner = new Map<string, Promise<void>>();

  constructor(deps: SnatReleaseDeps) {
    this.#deps = deps;
  }

  /** Elements queued or being removed. */
  get pending(): number {
    return this.#queue.length + (this.#running === undefined ? 0 : 1);
  }

  /** Resolves once `ip`'s element is gone (a failed removal is retried until it is). */
  release(ip: string): Promise<void> {
    return new Promise<void>((done) => {
      this.#queue.push({ ip, done });
      // Started after this call returns, so a release() made while starting (even from inside
      // the removal) finds it running and queues behind it.
      this.#running ??= Promise.resolve()
        .then(() => this.#drain())
        .finally(() => {
          this.#running = undefined;
        });
    });
  }

  /**
   * Records `work` (the removal of an owner's elements and its address's release) until it
   * settles. An ADD of the same owner key (a reused container ID) waits for it first: otherwise the
   * pool would hand it the address its own DEL still holds, whose element this removal is about to
   * delete, and then start that address's cooldown under the new pod.
   */
  track(owner: string, work: Promise<void>): void {
    const tracked = work.finally(() => {
      if (this.#byOwner.get(owner) === tracked) this.#byOwner.delete(owner);
    });
    this.#byOwner.set(owner, tracked);
  }

  /** Resolves once what a DEL of `owner` left behind its answer is done (at once if nothing). */
  async settledFor(owner: string): Promise<void> {
    await this.#byOwner.get(owner)?.catch(() => undefined);
  }

  /** Resolves when nothing is queued or in flight (agent stop, tests). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue;
      this.#queue = [];
      try {
        await this.#deps.remove(batch.map((w): Resource => ({ kind: 'snat', ip: w.ip })));
        this.#failures = 0;
        for (const w of batch) w.done();
      } catch (err) {
        // Kept, in front of what came meanwhile: the addresses stay out of the pool until then.
        this.#queue = [...batch, ...this.#queue];
        const waitMs = Math.min(MAX_RETRY_MS, (this.#deps.retryMs ?? 1000) * 2 ** this.#failures++);
        this.#deps.log.warn('SNAT elements of deleted pods could not be removed; retrying', {
          ips: batch.map((w) => w.ip),
          retryInMs: waitMs,
          error: errorText(err),
        });
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }
}
