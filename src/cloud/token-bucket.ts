// A token bucket, as EC2 throttles with one: `burst` tokens at most, refilled at `ratePerSecond`.
// take() reserves the next token and waits until it exists, so callers are served in the order
// they asked and nobody polls: a reservation made while the bucket is empty pushes the level
// below zero, and the next caller waits behind it.

export interface BucketClock {
  /** Milliseconds on a monotonic clock (performance.now in production). */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export interface TokenBucketLimits {
  /** Tokens added per second (may be fractional: 0.05 is one every 20 s). */
  readonly ratePerSecond: number;
  /** Most tokens the bucket holds: how many calls may go at once after a quiet time. */
  readonly burst: number;
}

export class TokenBucket {
  readonly #limits: TokenBucketLimits;
  readonly #clock: BucketClock;
  /** Tokens available at #updatedAt; negative while callers wait for tokens not yet refilled. */
  #level: number;
  #updatedAt: number;

  constructor(limits: TokenBucketLimits, clock: BucketClock) {
    if (!(limits.ratePerSecond > 0) || !Number.isFinite(limits.ratePerSecond)) {
      throw new Error(`token bucket rate must be a positive number, got ${limits.ratePerSecond}`);
    }
    if (!Number.isInteger(limits.burst) || limits.burst < 1) {
      throw new Error(`token bucket burst must be a positive integer, got ${limits.burst}`);
    }
    this.#limits = limits;
    this.#clock = clock;
    this.#level = limits.burst;
    this.#updatedAt = clock.now();
  }

  /** Takes one token, waiting for it if none is left; resolves with the milliseconds waited. */
  async take(): Promise<number> {
    const waitMs = this.reserve();
    if (waitMs > 0) await this.#clock.sleep(waitMs);
    return waitMs;
  }

  /** Reserves one token now; returns how long the caller must wait before using it (0: at once). */
  reserve(): number {
    this.#refill();
    this.#level -= 1;
    return this.#level >= 0 ? 0 : (-this.#level / this.#limits.ratePerSecond) * 1000;
  }

  /** Tokens available now (negative: reservations waiting). */
  available(): number {
    this.#refill();
    return this.#level;
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsedMs = Math.max(0, now - this.#updatedAt);
    this.#updatedAt = now;
    this.#level = Math.min(this.#limits.burst, this.#level + (elapsedMs / 1000) * this.#limits.ratePerSecond);
  }
}
