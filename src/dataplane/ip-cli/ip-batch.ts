// Reading the output of `ip [-j] [-force] -batch -`: which lines failed and why, and the JSON that
// the successful `show` lines printed, in order.

export interface BatchFailure {
  /** 1-based line of the batch. */
  readonly line: number;
  readonly message: string;
}

/** Failures named by `Command failed -:N`; the message is what ip printed before it. */
export function parseBatchFailures(stderr: string): BatchFailure[] {
  const failures: BatchFailure[] = [];
  let pending: string[] = [];
  for (const raw of stderr.split('\n')) {
    const text = raw.trim();
    if (text === '') continue;
    const m = /^Command failed -:(\d+)$/.exec(text);
    if (m) {
      failures.push({ line: Number(m[1]), message: pending.join('; ') || 'unknown error' });
      pending = [];
    } else {
      pending.push(text);
    }
  }
  return failures;
}

/** Splits concatenated JSON documents (ip prints one per successful `show` line). */
export function splitJsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (c === ']' || c === '}') {
      depth--;
      if (depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return values;
}

/**
 * The JSON result of each batch line (undefined for lines that failed or printed nothing).
 * `printing` lists the 1-based lines that print JSON when they succeed.
 */
export function batchOutputs(
  stdout: string,
  stderr: string,
  printing: readonly number[],
): Map<number, unknown> {
  const failed = new Set(parseBatchFailures(stderr).map((f) => f.line));
  const values = splitJsonValues(stdout);
  const out = new Map<number, unknown>();
  let next = 0;
  for (const line of printing) {
    if (failed.has(line)) continue;
    out.set(line, values[next++]);
  }
  return out;
}
