// Order statistics and timing for the benchmark: nearest-rank percentiles (the agent's
// src/agent/stats.ts uses the same definition, so a bench figure and the agent's own agree).

/** Nearest-rank percentile of `xs` (0 when empty); p99 of 100 samples or fewer is their maximum. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] ?? 0;
}

/** Wall time of `fn` in milliseconds. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
