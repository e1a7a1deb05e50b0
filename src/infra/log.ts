// Structured log lines (one JSON object per line on stderr), with a level threshold.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function jsonLogger(
  level: LogLevel,
  write: (line: string) => void = (l) => process.stderr.write(l),
  now: () => number = Date.now,
): Logger {
  const emit = (lvl: LogLevel) => (msg: string, fields?: LogFields) => {
    if (rank[lvl] < rank[level]) return;
    write(`${JSON.stringify({ time: new Date(now()).toISOString(), level: lvl, msg, ...fields })}\n`);
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
