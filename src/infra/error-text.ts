// One way to turn whatever was thrown into the text an operator reads in a log line or an error.

/** The message of an Error, else the thrown value as text. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
