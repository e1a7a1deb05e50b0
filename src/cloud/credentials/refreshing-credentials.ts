// Temporary credentials kept until shortly before they expire, then fetched again; concurrent
// callers share one fetch. A fetch that fails while the credentials in hand still work leaves
// them in use (the next call tries again), so a short STS or IMDS outage costs no EC2 call.
import type { AwsCredentials, CredentialSource } from './aws-credentials.ts';

export interface RefreshingCredentialsOptions {
  /** Refresh this long before expiry, ms (default 5 minutes). */
  readonly marginMs?: number;
  readonly now?: () => number;
}

export class RefreshingCredentials {
  readonly source: CredentialSource;
  private readonly marginMs: number;
  private readonly now: () => number;
  private current: { readonly credentials: AwsCredentials; readonly refreshAt: number } | undefined;
  private fetching: Promise<AwsCredentials> | undefined;

  constructor(source: CredentialSource, options: RefreshingCredentialsOptions = {}) {
    this.source = source;
    this.marginMs = options.marginMs ?? 5 * 60_000;
    this.now = options.now ?? Date.now;
  }

  get(): Promise<AwsCredentials> {
    const held = this.current;
    const now = this.now();
    if (held !== undefined && now < held.refreshAt) return Promise.resolve(held.credentials);
    const refresh = this.refresh();
    const expiresAt = held?.credentials.expiresAt;
    if (held === undefined || expiresAt === undefined || now >= expiresAt) return refresh;
    // Still valid, only due for renewal: a failed refresh keeps them.
    return refresh.catch(() => held.credentials);
  }

  /** Forgets the credentials in hand, e.g. after EC2 said they expired. */
  invalidate(): void {
    this.current = undefined;
  }

  private refresh(): Promise<AwsCredentials> {
    if (this.fetching === undefined) {
      this.fetching = this.source
        .fetch()
        .then((credentials) => {
          this.current = { credentials, refreshAt: this.refreshAt(credentials) };
          return credentials;
        })
        .finally(() => {
          this.fetching = undefined;
        });
    }
    return this.fetching;
  }

  private refreshAt(credentials: AwsCredentials): number {
    if (credentials.expiresAt === undefined) return Number.POSITIVE_INFINITY;
    // Credentials that live shorter than twice the margin are renewed half way through instead
    // of on every call.
    const left = credentials.expiresAt - this.now();
    return credentials.expiresAt - Math.min(this.marginMs, Math.max(0, left / 2));
  }
}
