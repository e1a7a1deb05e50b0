// Why the pool cannot grow right now: set by a failed pass of the pool manager (EC2 throttling or
// failing, a link that cannot be configured), cleared by the next pass that succeeds. ADDs are
// still served from the warm pool meanwhile; this is what the agent's state and log say about it.

import type { PoolLog } from './pool-parts.ts';

export type GrowthState =
  | { readonly blocked: null }
  | {
      /** The last failure, EC2's error code first; `ec2Budget` while a growth call waits for a token. */
      readonly blocked: string;
      /** When the first of the consecutive failures happened (ms since epoch). */
      readonly since: number;
      readonly failures: number;
      /** With `ec2Budget`: the call waiting for its token (pool-budget.ts). */
      readonly wait?: {
        readonly action: string;
        readonly waitedMs: number;
        readonly readyInMs: number;
        readonly ratePerSecond: number;
      };
    };

export class PoolGrowthHealth {
  readonly #log: PoolLog;
  readonly #now: () => number;
  #state: GrowthState = { blocked: null };

  constructor(log: PoolLog, clock: { now(): number }) {
    this.#log = log;
    this.#now = () => clock.now();
  }

  get state(): GrowthState {
    return this.#state;
  }

  failed(reason: string): void {
    const prior = this.#state;
    if (prior.blocked === null) {
      this.#state = { blocked: reason, since: this.#now(), failures: 1 };
      this.#log.warn('address pool cannot grow; ADDs are served from the warm pool meanwhile', { reason });
      return;
    }
    this.#state = { blocked: reason, since: prior.since, failures: prior.failures + 1 };
  }

  /**
   * The pool holds back on purpose since `since` (a cordoned node): blocked with the reason, no
   * failure counted; logged by the caller.
   */
  held(reason: string, since: number): void {
    this.#state = { blocked: reason, since, failures: 0 };
  }

  succeeded(): void {
    const prior = this.#state;
    if (prior.blocked === null) return;
    this.#state = { blocked: null };
    this.#log.info('address pool can grow again', {
      failures: prior.failures,
      blockedForMs: this.#now() - prior.since,
    });
  }
}
