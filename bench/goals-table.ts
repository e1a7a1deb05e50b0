// vpcnet's performance goals as one aligned table: each figure, the reference's figure measured in the same
// run where there is one, their ratio, the goal and whether it is met. A figure that was not
// measured (section not chosen) is left out; one that could not be read shows "n/a".

/** A goal on the ratio vpcnet / reference, or on vpcnet's own value. */
export type Goal = { readonly ratioAtMost: number } | { readonly atMost: number };

export interface Figure {
  readonly name: string;
  readonly unit: 'ms' | 'MiB' | 'x';
  readonly value: number | undefined;
  readonly reference?: number;
  readonly goal?: Goal;
  readonly note?: string;
}

function ratioOf(f: Figure): number | undefined {
  return f.value === undefined || f.reference === undefined || f.reference === 0
    ? undefined
    : f.value / f.reference;
}

/** undefined: no goal, or nothing to judge it by. */
export function goalMet(f: Figure): boolean | undefined {
  if (f.goal === undefined) return undefined;
  if ('ratioAtMost' in f.goal) {
    const r = ratioOf(f);
    return r === undefined ? undefined : r <= f.goal.ratioAtMost;
  }
  return f.value === undefined ? undefined : f.value <= f.goal.atMost;
}

function number(v: number | undefined, unit: Figure['unit']): string {
  if (v === undefined) return 'n/a';
  const digits = unit === 'x' ? 2 : v >= 100 ? 0 : 1;
  return `${v.toFixed(digits)}${unit === 'x' ? 'x' : ''}`;
}

function goalText(f: Figure): string {
  if (f.goal === undefined) return '';
  return 'ratioAtMost' in f.goal
    ? `<= ${f.goal.ratioAtMost}x ref`
    : `<= ${f.goal.atMost}${f.unit === 'x' ? 'x' : ` ${f.unit}`}`;
}

const HEADER = ['figure', 'unit', 'vpcnet', 'reference', 'ratio', 'goal', 'met'];

export function formatGoalsTable(figures: readonly Figure[]): string {
  const rows = figures.map((f) => {
    const met = goalMet(f);
    const ratio = ratioOf(f);
    return [
      f.name + (f.note === undefined ? '' : ` (${f.note})`),
      f.unit === 'x' ? '' : f.unit,
      number(f.value, f.unit),
      f.reference === undefined ? '' : number(f.reference, f.unit),
      ratio === undefined ? '' : `${ratio.toFixed(2)}x`,
      goalText(f),
      met === undefined ? (f.goal === undefined ? '' : 'n/a') : met ? 'yes' : 'NO',
    ];
  });
  const widths = HEADER.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd();
  const met = figures.filter((f) => goalMet(f) === true).length;
  const judged = figures.filter((f) => goalMet(f) !== undefined).length;
  return [
    line(HEADER),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    `goals met: ${met} of ${judged}`,
  ].join('\n');
}
