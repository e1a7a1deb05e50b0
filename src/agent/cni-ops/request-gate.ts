// Graceful stop: the gate CNI requests pass through. Once the agent begins to stop it lets no new
// request in (the RPC server then closes that connection unanswered, which the plugin treats as an
// unreachable agent: a DEL is spooled, an ADD fails with "try again later"), and it tells the stop
// when the last request it let in has been answered.
import { CNI_ERR_TRY_AGAIN_LATER, CniError } from '../../cni/errors.ts';
import { errorVersionFor } from '../../cni/versions.ts';
import type { ForwardedRequest, ForwardedResponse } from '../../cni/wire.ts';

export class RequestGate {
  #open = true;
  #inFlight = 0;
  #idleWaiters: (() => void)[] = [];

  /** Requests let in and not yet answered. */
  get inFlight(): number {
    return this.#inFlight;
  }

  get open(): boolean {
    return this.#open;
  }

  /**
   * Runs `op` as an admitted request; undefined when the gate is closed (nothing was run). The
   * caller checks and runs in one synchronous step, so no request slips in after close().
   */
  run<T>(op: () => Promise<T>): Promise<T> | undefined {
    if (!this.#open) return undefined;
    this.#inFlight++;
    const done = () => {
      this.#inFlight--;
      if (this.#inFlight === 0) this.#wakeIdle();
    };
    return op().finally(done);
  }

  /** Lets no new request in; those already in go on. */
  close(): void {
    this.#open = false;
  }

  /** Resolves once no admitted request is in flight. */
  idle(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #wakeIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}

/**
 * The answer to a request that reached the handler after the gate closed (only an in-process
 * caller can: the RPC server closes such a connection instead): "try again later", code 11.
 */
export function refusedWhileStopping(req: ForwardedRequest): ForwardedResponse {
  const err = new CniError(CNI_ERR_TRY_AGAIN_LATER, 'the vpcnet agent is stopping; try again later');
  return { exitCode: 1, stdout: `${JSON.stringify(err.toJson(errorVersionFor(req.stdin)))}\n` };
}
