// A starting agent that EC2 throttles keeps trying instead of exiting. Its start-up reads (the
// instance type's limits, the node's ENIs) already retry within the cloud's budget, but a call
// gives up after its time bound (60 s); exiting then would cost the node a restart (under
// Kubernetes a growing CrashLoopBackOff) and every start-up call again, while EC2's throttling is
// the one failure that passes by itself. The DaemonSet's startup probe allows 5 minutes.
import { isThrottled } from '../cloud/ec2-retry.ts';
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';

export interface ThrottledStartDeps {
  readonly log: Pick<Logger, 'warn'>;
  readonly sleep: (ms: number) => Promise<unknown>;
  readonly random: () => number;
}

/** Between two tries of a step: 1 to 2 s (the cloud's own retries, holds and pace spaced those within it). */
const PAUSE_MS = 1000;

/** Runs `run` (start-up step `step`) again, after a pause, for as long as it fails because EC2 throttled it. */
export async function untilNotThrottled<T>(
  step: string,
  run: () => Promise<T>,
  d: ThrottledStartDeps,
): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await run();
    } catch (err) {
      if (!throttledAlong(err)) throw err;
      const pauseMs = Math.round(PAUSE_MS * (1 + d.random()));
      d.log.warn(
        "EC2 throttles the agent's start; it tries again instead of exiting (the node's pods wait)",
        {
          step,
          tries,
          pauseMs,
          error: errorText(err),
        },
      );
      await d.sleep(pauseMs);
    }
  }
}

/** The error, or one it was caused by, is EC2's throttling. */
function throttledAlong(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 8; depth++) {
    if (isThrottled(e)) return true;
    e = e instanceof Error ? e.cause : undefined;
  }
  return false;
}
