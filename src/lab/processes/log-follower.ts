// `lab up --detach` shows the detached supervisor's progress: the supervisor writes JSON lines to
// its log file, and the waiting command reads what was appended since it last looked.
import { readFileSync } from 'node:fs';

/**
 * Returns a function that, on each call, passes the complete JSON-object lines appended to `file`
 * since the last call to `onLine` (a partial last line waits for the next call; other lines,
 * such as a stack trace, are skipped: the failure message quotes the log). A missing file is empty.
 */
export function logFollower(
  file: string,
  onLine: (line: Record<string, unknown>) => void,
  read: (file: string) => Buffer = readFileSync,
): () => void {
  let offset = 0;
  let pending = '';
  return () => {
    let text: string;
    try {
      const buf = read(file);
      text = buf.subarray(offset).toString('utf8');
      offset = buf.length;
    } catch {
      return;
    }
    const lines = (pending + text).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
        onLine(parsed as Record<string, unknown>);
      }
    }
  };
}
