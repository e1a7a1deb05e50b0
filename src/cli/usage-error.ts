// A command line a command cannot run with: exit 2, one line saying what is wrong and where the
// command's options are explained (never the whole help again: it buries the one line that matters).

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** node:util's parseArgs failures (unknown option, missing value, stray positional). */
export function isParseArgsError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

export function isUsageError(err: unknown): err is Error {
  return err instanceof UsageError || isParseArgsError(err);
}

/** What a usage error prints: `<command>: <what is wrong>` and the pointer to its --help. */
export function usageText(command: string, err: Error): string {
  return `${command}: ${err.message}\nRun '${command} --help' for its options.\n`;
}
