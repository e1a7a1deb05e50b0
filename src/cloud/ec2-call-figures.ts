// What the EC2 rate limit and retries did, kept for the operator: calls by action, throttled
// answers, retries, failures and the time spent waiting. LimitedCloud counts; the agent shows.
import type { TokenWait } from './ec2-budget.ts';
import type { LaneState } from './ec2-lane.ts';

/** Per EC2 action. A call is one Cloud method call; an attempt is one request to EC2. */
export interface Ec2ActionFigures {
  readonly calls: number;
  readonly attempts: number;
  /** Answers that were RequestLimitExceeded (or another throttling code). */
  readonly throttled: number;
  /** Retryable answers that were not throttling: 5xx, timeouts, network errors. */
  readonly errors: number;
  readonly retries: number;
  /** Calls that failed in the end (after their retries, or at once when not retryable). */
  readonly failures: number;
}

export interface Ec2CallFigures extends Ec2ActionFigures {
  readonly byAction: Readonly<Record<string, Ec2ActionFigures>>;
  /** Throttled answers since the last answer that was not throttled: > 0 means "throttled now". */
  readonly throttledInARow: number;
  /** Total time calls waited for a token of the agent's own rate limit, ms. */
  readonly tokenWaitMs: number;
  /** Total time calls waited between attempts (backoff), ms. */
  readonly backoffMs: number;
  /** Tokens of the agent's ceiling bucket now. */
  readonly tokensAvailable: number;
  /** Per EC2 action: the budget's rate now, how often EC2's throttling cut it, when last. */
  readonly lanes?: Readonly<Record<string, LaneState>>;
  /** The most urgent call waiting for a token, if one waits. */
  readonly waiting?: TokenWait;
  /** Why releases are not sent now, while EC2 throttles. */
  readonly releasesHeld?: string;
}

type Counts = { -readonly [K in keyof Ec2ActionFigures]: number };

const zero = (): Counts => ({ calls: 0, attempts: 0, throttled: 0, errors: 0, retries: 0, failures: 0 });

export class Ec2CallTally {
  readonly #byAction = new Map<string, Counts>();
  #throttledInARow = 0;
  #tokenWaitMs = 0;
  #backoffMs = 0;

  called(action: string): void {
    this.#of(action).calls++;
  }

  waitedForToken(ms: number): void {
    this.#tokenWaitMs += ms;
  }

  answered(action: string, answer: 'ok' | 'throttled' | 'retryable' | 'failed'): void {
    const counts = this.#of(action);
    counts.attempts++;
    if (answer === 'throttled') {
      counts.throttled++;
      this.#throttledInARow++;
      return;
    }
    this.#throttledInARow = 0;
    if (answer === 'retryable') counts.errors++;
  }

  retried(action: string, delayMs: number): void {
    this.#of(action).retries++;
    this.#backoffMs += delayMs;
  }

  failed(action: string): void {
    this.#of(action).failures++;
  }

  figures(tokensAvailable: number): Ec2CallFigures {
    const total = zero();
    const byAction: Record<string, Ec2ActionFigures> = {};
    for (const [action, counts] of [...this.#byAction].sort(([a], [b]) => a.localeCompare(b))) {
      byAction[action] = { ...counts };
      for (const key of Object.keys(total) as (keyof Counts)[]) total[key] += counts[key];
    }
    return {
      ...total,
      byAction,
      throttledInARow: this.#throttledInARow,
      tokenWaitMs: Math.round(this.#tokenWaitMs),
      backoffMs: Math.round(this.#backoffMs),
      tokensAvailable: Math.floor(tokensAvailable * 100) / 100,
    };
  }

  #of(action: string): Counts {
    let counts = this.#byAction.get(action);
    if (counts === undefined) {
      counts = zero();
      this.#byAction.set(action, counts);
    }
    return counts;
  }
}
