// Fault injection for EC2 (and optionally IMDS): throttling, internal errors, latency and stale
// reads (EC2's own and IMDS's each switched on its own), decided by an injectable random source
// so that a seeded run injects the same faults every time.
import type { FaultSettings } from './api.ts';
import { Ec2Error } from './ec2/error.ts';
import type { RandomSource } from './vpc/ids.ts';

export interface FaultDecision {
  readonly latencyMs: number;
  /** Serve reads from the VPC as it was this many ms ago (0: the live state). */
  readonly staleReadMs: number;
  /** The error to answer with instead of running the call, if any. */
  readonly error: Ec2Error | undefined;
  /** Run the call, then answer InternalError as if its reply were lost. */
  readonly replyLost?: boolean;
  /** A Describe* page holds at most this many items (FaultSettings.pageItems). */
  readonly pageItems?: number;
}

const NONE: FaultDecision = { latencyMs: 0, staleReadMs: 0, error: undefined };

function checkRate(name: string, rate: number | undefined): void {
  if (rate !== undefined && !(rate >= 0 && rate <= 1))
    throw new Error(`${name} must be within [0,1], got ${rate}`);
}

/** How far back reads may reach under `settings`: the stale-read history keeps that much. */
export function staleWindowMs(settings: FaultSettings): number {
  return Math.max(settings.staleReadMs ?? 0, settings.imdsStaleReadMs ?? 0);
}

export class FaultInjector {
  readonly #random: RandomSource;
  readonly #onSet: (s: FaultSettings) => void;
  #settings: FaultSettings = {};

  constructor(random: RandomSource, onSet: (s: FaultSettings) => void = () => {}) {
    this.#random = random;
    this.#onSet = onSet;
  }

  get settings(): FaultSettings {
    return this.#settings;
  }

  set(settings: FaultSettings): void {
    checkRate('throttleRate', settings.throttleRate);
    checkRate('errorRate', settings.errorRate);
    checkRate('replyLostRate', settings.replyLostRate);
    if (settings.latencyMs !== undefined && !(settings.latencyMs >= 0)) {
      throw new Error(`latencyMs must be >= 0, got ${settings.latencyMs}`);
    }
    for (const [name, ms] of [
      ['staleReadMs', settings.staleReadMs],
      ['imdsStaleReadMs', settings.imdsStaleReadMs],
    ] as const) {
      if (ms !== undefined && !(ms >= 0)) throw new Error(`${name} must be >= 0, got ${ms}`);
    }
    if (
      settings.pageItems !== undefined &&
      !(Number.isInteger(settings.pageItems) && settings.pageItems >= 1)
    ) {
      throw new Error(`pageItems must be an integer >= 1, got ${settings.pageItems}`);
    }
    this.#settings = settings;
    this.#onSet(settings);
  }

  /** For an EC2 action name, or `undefined` for an IMDS request. */
  decide(action: string | undefined): FaultDecision {
    const s = this.#settings;
    if (action === undefined && s.imds !== true) {
      // IMDS's lag is its own fault; its errors and latency come only with `imds`.
      return s.imdsStaleReadMs === undefined ? NONE : { ...NONE, staleReadMs: s.imdsStaleReadMs };
    }
    if (action !== undefined && s.actions !== undefined && !s.actions.includes(action)) return NONE;
    const latencyMs = s.latencyMs ?? 0;
    const pages = action !== undefined && s.pageItems !== undefined ? { pageItems: s.pageItems } : {};
    const staleReadMs = (action === undefined ? s.imdsStaleReadMs : undefined) ?? s.staleReadMs ?? 0;
    // One draw per configured rate, so a rate's decisions do not shift when the other changes.
    const throttled = s.throttleRate !== undefined && this.#random() < s.throttleRate;
    const failed = s.errorRate !== undefined && this.#random() < s.errorRate;
    if (throttled)
      return {
        latencyMs,
        staleReadMs,
        error: new Ec2Error('RequestLimitExceeded', 'Request limit exceeded.', 503),
        ...pages,
      };
    if (failed) {
      return {
        latencyMs,
        staleReadMs,
        error: new Ec2Error('InternalError', 'An internal error has occurred', 500),
        ...pages,
      };
    }
    // Drawn only when set, so seeded runs without it see the same faults as before.
    const replyLost = s.replyLostRate !== undefined && this.#random() < s.replyLostRate;
    return { latencyMs, staleReadMs, error: undefined, ...(replyLost ? { replyLost } : {}), ...pages };
  }
}
