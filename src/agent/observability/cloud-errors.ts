// The last EC2 errors, for the agent's state (`cloudErrors`, newest first): what an operator looks
// at first when the pool cannot grow ("UnauthorizedOperation", "InsufficientFreeAddressesInSubnet").
import type { Ec2Attempt } from '../../cloud/limited-cloud.ts';

export interface CloudErrorEntry {
  /** ISO 8601. */
  readonly time: string;
  readonly action: string;
  readonly code: string;
  readonly message: string;
}

export const CLOUD_ERRORS_KEPT = 20;

export class RecentCloudErrors {
  readonly #now: () => number;
  readonly #kept: number;
  /** Oldest first; reversed when read (reads are rare, errors may come in bursts). */
  readonly #entries: CloudErrorEntry[] = [];

  constructor(now: () => number, kept = CLOUD_ERRORS_KEPT) {
    this.#now = now;
    this.#kept = kept;
  }

  /** An EC2 answer; only errors are kept. */
  record(attempt: Ec2Attempt): void {
    if (attempt.error === undefined) return;
    const { code, message } = attempt.error;
    this.#entries.push({ time: new Date(this.#now()).toISOString(), action: attempt.action, code, message });
    if (this.#entries.length > this.#kept) this.#entries.splice(0, this.#entries.length - this.#kept);
  }

  /** Newest first. */
  list(): CloudErrorEntry[] {
    return [...this.#entries].reverse();
  }
}
