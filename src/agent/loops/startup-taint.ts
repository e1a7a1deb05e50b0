// Node readiness (upstream #2808): nodes can be registered with a startup taint so that no pod is
// scheduled onto them before their CNI can serve it. The agent removes that taint from its own
// node once it serves (its socket answers) and its pool has a free address; until the pool has
// one it waits (the pool manager is growing it). API errors are retried with backoff; the removal
// is logged once and reported as an Event on the node. Without a Kubernetes API: nothing.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { EventRecorder } from '../../pods/kube-events.ts';
import type { NodeTaints } from '../../pods/node-taints.ts';

export interface StartupTaintDeps {
  readonly taints: Pick<NodeTaints, 'remove'>;
  /** The taint key (VPCNET_STARTUP_TAINT). */
  readonly key: string;
  readonly nodeName: string;
  /** Whether the pool has an address an ADD could take now. */
  readonly hasFreeAddress: () => boolean;
  readonly events?: EventRecorder | undefined;
  readonly log: Logger;
  /** How often a pool without free addresses is looked at again (default 1 s). */
  readonly pollMs?: number;
  /** First wait after a failed API call, doubled per failure up to maxRetryMs (defaults 1 s, 30 s). */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

export type StartupTaintState = 'waitingForAddresses' | 'removing' | 'removed' | 'absent' | 'stopped';

export class StartupTaint {
  readonly #d: StartupTaintDeps;
  #state: StartupTaintState = 'waitingForAddresses';
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;

  constructor(deps: StartupTaintDeps) {
    this.#d = deps;
  }

  get state(): StartupTaintState {
    return this.#state;
  }

  start(): void {
    this.#running ??= this.#run();
  }

  /** Resolves once the loop ended (a call under way is awaited, bounded by the client's timeout). */
  async stop(): Promise<void> {
    if (this.#state !== 'removed' && this.#state !== 'absent') this.#state = 'stopped';
    clearTimeout(this.#timer);
    this.#wake?.();
    await this.#running;
  }

  async #run(): Promise<void> {
    const { log, key } = this.#d;
    let failures = 0;
    let toldWaiting = false;
    while (this.#state !== 'stopped') {
      if (!this.#d.hasFreeAddress()) {
        if (!toldWaiting) log.info('startup taint: waiting for a free address before removing it', { key });
        toldWaiting = true;
        await this.#sleep(this.#d.pollMs ?? 1000);
        continue;
      }
      this.#state = 'removing';
      try {
        const outcome = await this.#d.taints.remove(key);
        this.#state = outcome;
        this.#report(outcome);
        return;
      } catch (err) {
        failures++;
        const retryInMs = Math.min(
          this.#d.maxRetryMs ?? 30_000,
          (this.#d.retryMs ?? 1000) * 2 ** (failures - 1),
        );
        // The first failure is worth a line; the retries that follow are not.
        const level = failures === 1 ? 'warn' : 'debug';
        log[level]('startup taint: cannot remove it; retrying', {
          key,
          error: errorText(err),
          failures,
          retryInMs,
        });
        if ((this.#state as StartupTaintState) === 'stopped') return;
        this.#state = 'waitingForAddresses';
        await this.#sleep(retryInMs);
      }
    }
  }

  #report(outcome: 'removed' | 'absent'): void {
    const { log, key, nodeName } = this.#d;
    if (outcome === 'absent') {
      log.info('startup taint: not on the node; nothing to remove', { key, node: nodeName });
      return;
    }
    log.info('startup taint removed: the node takes pods', { key, node: nodeName });
    this.#d.events?.emit({
      involved: { kind: 'Node', name: nodeName, uid: nodeName },
      type: 'Normal',
      reason: 'StartupTaintRemoved',
      message: `vpcnet agent serves and has free addresses: removed taint ${key}`,
    });
  }

  #sleep(ms: number): Promise<void> {
    if (this.#state === 'stopped') return Promise.resolve();
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#timer = setTimeout(resolve, ms);
      this.#timer.unref();
    });
  }
}

/** The agent's startup-taint loop, started; undefined without a Kubernetes API (nothing to do). */
export function startStartupTaint(
  taints: Pick<NodeTaints, 'remove'> | undefined,
  deps: Omit<StartupTaintDeps, 'taints'>,
): StartupTaint | undefined {
  if (taints === undefined) return undefined;
  const loop = new StartupTaint({ ...deps, taints });
  loop.start();
  return loop;
}
