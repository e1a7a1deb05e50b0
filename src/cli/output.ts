// How vpcnetctl talks to people and to scripts: aligned tables for people, one JSON document with
// --json for scripts, colour only on a terminal (never with --json, never with NO_COLOR set), and
// exit codes that say what the node is (DESIGN's probes and scripts read them).

/** What a status-like command found; its exit code is the verdict. */
export type Verdict = 'healthy' | 'degraded' | 'down';

export const EXIT_HEALTHY = 0;
/** Serving, with warnings. */
export const EXIT_DEGRADED = 1;
export const EXIT_USAGE = 2;
/** No agent, or an agent that does not serve yet. */
export const EXIT_DOWN = 3;

export function exitCodeOf(verdict: Verdict): number {
  if (verdict === 'healthy') return EXIT_HEALTHY;
  return verdict === 'degraded' ? EXIT_DEGRADED : EXIT_DOWN;
}

/** The worse of two verdicts. */
export function worse(a: Verdict, b: Verdict): Verdict {
  const rank: Record<Verdict, number> = { healthy: 0, degraded: 1, down: 2 };
  return rank[a] >= rank[b] ? a : b;
}

/** Colour for people at a terminal only: https://no-color.org (NO_COLOR set, to anything, turns it off). */
export function colourWanted(
  stdoutIsTty: boolean,
  env: Readonly<Record<string, string | undefined>>,
  json: boolean,
): boolean {
  const noColor = env.NO_COLOR;
  return stdoutIsTty && !json && (noColor === undefined || noColor === '');
}

export type Tone = 'good' | 'warn' | 'bad' | 'faint' | 'strong';

const SGR: Record<Tone, string> = { good: '32', warn: '33', bad: '31', faint: '2', strong: '1' };

/** The printer a command writes with: `tone` is a no-op without colour. */
export interface Printer {
  readonly colour: boolean;
  tone(tone: Tone, text: string): string;
}

export function printer(colour: boolean): Printer {
  return {
    colour,
    tone: (tone, text) => (colour && text !== '' ? `\u001b[${SGR[tone]}m${text}\u001b[0m` : text),
  };
}

export function verdictTone(verdict: Verdict): Tone {
  if (verdict === 'healthy') return 'good';
  return verdict === 'degraded' ? 'warn' : 'bad';
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape sequences colour adds
const ANSI = /\u001b\[[0-9;]*m/g;

/** The width a cell takes on screen (its colour codes take none). */
export function visibleWidth(text: string): number {
  return [...text.replace(ANSI, '')].length;
}

/**
 * Columns aligned on the widest cell, two spaces apart, headers in upper case; the last column is
 * not padded (no trailing blanks). An empty table prints its headers only.
 */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers.map((h) => h.toUpperCase()), ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => visibleWidth(r[i] ?? ''))));
  const line = (r: readonly string[]) =>
    headers
      .map((_, i) => {
        const cell = r[i] ?? '';
        return i === headers.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - visibleWidth(cell));
      })
      .join('  ')
      .trimEnd();
  return `${all.map(line).join('\n')}\n`;
}

/** One JSON document for scripts, and nothing else on stdout. */
export function jsonDocument(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** "3m", "2h5m", "4d": how long ago `thenMs` was, for an AGE column. */
export function age(thenMs: number, nowMs: number): string {
  const s = Math.max(0, Math.floor((nowMs - thenMs) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  return `${Math.floor(h / 24)}d`;
}
