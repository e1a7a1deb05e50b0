// The one error a ledger load refuses with: a stored file that exists but cannot be trusted.

/** Thrown by load() for a file that exists but cannot be trusted; names the file and the bad field. */
export class LedgerLoadError extends Error {
  constructor(
    readonly path: string,
    readonly field: string | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LedgerLoadError';
  }
}
