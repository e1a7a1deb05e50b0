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

/**
 * The stored ledger was written by a newer agent (a schema this one does not know): a downgrade.
 * Not a corrupt file: it is neither set aside nor rewritten, and the agent does not start, since
 * starting without it would forget what the newer agent recorded (ownership, cooldowns).
 */
export class LedgerTooNewError extends Error {
  constructor(
    readonly path: string,
    readonly schemaVersion: number,
    readonly readable: number,
  ) {
    super(
      `ledger ${path} has schema ${schemaVersion}, written by a newer vpcnet agent; this agent reads schemas up to ${readable}. ` +
        'Refusing to start rather than lose or rewrite it: run that newer version again (roll forward), or move the file away to start this one from the node alone.',
    );
    this.name = 'LedgerTooNewError';
  }
}
