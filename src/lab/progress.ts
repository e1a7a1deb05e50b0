// Progress of a long operation (`lab up`, `npm run image`) for a person at a terminal: one line per
// step on stderr, with the seconds since the operation started. Scripts read --json output instead.

export type Progress = (step: string) => void;

/** `<label> [  12.3 s] <step>` */
export function progressLine(label: string, elapsedMs: number, step: string): string {
  return `${label} [${(elapsedMs / 1000).toFixed(1).padStart(6)} s] ${step}\n`;
}

export function progressTo(
  write: (text: string) => void,
  label: string,
  now: () => number = Date.now,
): Progress {
  const start = now();
  return (step) => write(progressLine(label, now() - start, step));
}

export function stderrProgress(label: string): Progress {
  return progressTo((text) => process.stderr.write(text), label);
}

/** A lab log line (`{ msg, ...fields }`) as a progress step: the message, then its fields. */
export function logLineStep(line: Readonly<Record<string, unknown>>): string {
  const { msg, time: _time, ...fields } = line;
  const details = Object.entries(fields)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const text = typeof msg === 'string' ? msg : JSON.stringify(msg ?? '');
  return details === '' ? text : `${text} (${details})`;
}
