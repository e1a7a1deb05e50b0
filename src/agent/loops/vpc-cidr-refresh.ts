// Upstream re-reads the VPC's CIDR blocks from instance metadata, so a CIDR associated with the
// VPC later stops being SNATed without a restart. One pass reads them and, when the list changed,
// has the node's SNAT setup re-applied: that refills the VPC CIDR set in one nftables transaction
// and leaves the pods' SNAT elements alone.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { PeriodicLoop } from '../../infra/periodic.ts';

export interface VpcCidrRefreshDeps {
  /** The VPC's IPv4 CIDR blocks as instance metadata lists them now (one IMDS read). */
  read(): Promise<readonly string[]>;
  /** Re-applies the node's SNAT setup with these VPC CIDRs. */
  apply(vpcCidrs: readonly string[]): Promise<void>;
  /** The CIDRs the node was set up with at start. */
  readonly initial: readonly string[];
  readonly log: Logger;
  /** Told of every refresh: the list was the same, changed (and applied), or could not be read or applied. */
  readonly counted?: (result: VpcCidrRefreshResult) => void;
}

export type VpcCidrRefreshResult = 'unchanged' | 'changed' | 'failed';

function sameCidrs(a: readonly string[], b: readonly string[]): boolean {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((c, i) => c === y[i]);
}

export class VpcCidrRefresh {
  readonly #deps: VpcCidrRefreshDeps;
  #current: readonly string[];
  #changes = 0;

  constructor(deps: VpcCidrRefreshDeps) {
    this.#deps = deps;
    this.#current = [...deps.initial];
  }

  /** The VPC CIDRs the node's SNAT rule currently leaves untranslated. */
  get current(): readonly string[] {
    return this.#current;
  }

  /** How many times a changed CIDR list was applied since start. */
  get changes(): number {
    return this.#changes;
  }

  /** One read; true when the list changed and was applied. A failed read or apply throws (the loop retries). */
  async pass(): Promise<boolean> {
    const counted = this.#deps.counted ?? (() => {});
    try {
      const changed = await this.#pass();
      counted(changed ? 'changed' : 'unchanged');
      return changed;
    } catch (err) {
      counted('failed');
      throw err;
    }
  }

  async #pass(): Promise<boolean> {
    const read = await this.#deps.read();
    // An empty answer is a metadata hiccup, not a VPC without CIDRs: SNATing in-VPC traffic would break it.
    if (read.length === 0 || sameCidrs(read, this.#current)) return false;
    const before = this.#current;
    await this.#deps.apply(read);
    this.#current = [...read];
    this.#changes += 1;
    this.#deps.log.info('VPC CIDRs changed: SNAT exclusions updated', {
      before: [...before],
      after: [...read],
      added: read.filter((c) => !before.includes(c)),
      removed: before.filter((c) => !read.includes(c)),
      changes: this.#changes,
    });
    return true;
  }
}

/** The refresh as a background loop (not started), or undefined when `seconds` is 0 (read once at start). */
export function vpcCidrRefreshLoop(seconds: number, deps: VpcCidrRefreshDeps): PeriodicLoop | undefined {
  if (seconds === 0) return undefined;
  const refresh = new VpcCidrRefresh(deps);
  return new PeriodicLoop({
    run: () => refresh.pass(),
    intervalMs: seconds * 1000,
    firstAfterMs: seconds * 1000,
    unref: true,
    onFailure: (err, failures, retryInMs) =>
      deps.log.warn('VPC CIDR refresh failed', { error: errorText(err), failures, retryInMs }),
  });
}
