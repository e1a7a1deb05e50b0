// Reads the Prometheus text format back into numbers, so tests assert values, not text layout.

/** `name{a="x",b="y"}` (labels sorted) → value. HELP, TYPE and blank lines are skipped. */
export function parseExposition(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    samples.set(seriesKey(m[1]!, labelsOf(m[2] ?? '')), Number(m[3]));
  }
  return samples;
}

function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!;
  return labels;
}

/** The key parseExposition uses for a series. */
export function seriesKey(name: string, labels: Record<string, string> = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]}"`);
  return parts.length === 0 ? name : `${name}{${parts.join(',')}}`;
}

/** The value of one series, or undefined when the exposition lacks it. */
export function sample(
  samples: ReadonlyMap<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  return samples.get(seriesKey(name, labels));
}

/** Every metric family the text declares (`# TYPE name type`): name → type. */
export function familyTypes(text: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$/gm)) types.set(m[1]!, m[2]!);
  return types;
}
