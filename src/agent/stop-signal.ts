// Graceful stop on SIGTERM/SIGINT, bounded. The first signal starts the stop; a later one is
// logged and ignored, so a runtime's repeated TERM (or an operator's Ctrl-C) never cuts a stop
// short. A stop that does not finish within the bound (an operation in flight that hangs) exits
// non-zero anyway: the ledger is still consistent, since every answered operation was committed
// before its answer (durable before success), and the next start recovers the rest.
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';

/**
 * How long a stop may take. Kubernetes' default grace period is 30 s and an in-flight ADD needs
 * milliseconds to seconds; 20 s leaves the kubelet's KILL for a hang only.
 */
export const STOP_BOUND_MS = 20_000;

export interface StopOnSignalDeps {
  readonly log: Logger;
  /** Stops the agent and what it started; resolves once all of it is done. */
  readonly stop: () => Promise<void>;
  readonly exit: (code: number) => void;
  readonly boundMs?: number;
}

/** The handler to register for SIGTERM and SIGINT. */
export function stopOnSignal(deps: StopOnSignalDeps): (signal: string) => void {
  const { log } = deps;
  const boundMs = deps.boundMs ?? STOP_BOUND_MS;
  let stopping = false;
  return (signal) => {
    if (stopping) {
      log.info('stop: already under way; signal ignored', { signal });
      return;
    }
    stopping = true;
    log.info('stopping', { signal, boundMs });
    let finished = false;
    const timer = setTimeout(() => {
      if (finished) return;
      finished = true;
      // The last 'stop: ...' line before this one says which phase hung.
      log.error('stop did not finish in time; exiting without it', { boundMs, exitCode: 1 });
      deps.exit(1);
    }, boundMs);
    deps.stop().then(
      () => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        log.info('stopped', { exitCode: 0 });
        deps.exit(0);
      },
      (err: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        log.error('stop failed', { error: errorText(err), exitCode: 1 });
        deps.exit(1);
      },
    );
  };
}
