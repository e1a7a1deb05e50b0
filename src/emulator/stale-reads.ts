// History of VPC snapshots for the stale-read fault: a read at time T is served from the last
// snapshot taken at or before T. History starts when the fault is switched on (a snapshot of
// that moment) and is trimmed to the configured window.
import type { VpcState } from './vpc/state.ts';
import type { VpcView } from './vpc/view.ts';

export class StaleReadHistory {
  readonly #state: VpcState;
  readonly #nowMs: () => number;
  #windowMs = 0;
  #snapshots: { at: number; view: VpcView }[] = [];

  constructor(state: VpcState, nowMs: () => number) {
    this.#state = state;
    this.#nowMs = nowMs;
    state.onChange = () => this.record();
  }

  /** Start (or restart) keeping history for `windowMs`; 0 stops and forgets it. */
  reset(windowMs: number): void {
    this.#windowMs = windowMs;
    this.#snapshots = [];
    this.record();
  }

  record(): void {
    if (this.#windowMs <= 0) return;
    const now = this.#nowMs();
    this.#snapshots.push({ at: now, view: this.#state.snapshot() });
    // Keep the newest snapshot at or before the window's start: reads that far back need it.
    while (this.#snapshots.length > 1 && this.#snapshots[1]!.at <= now - this.#windowMs)
      this.#snapshots.shift();
  }

  /** The VPC as a read `staleMs` ago sees it; the live state when there is no history. */
  view(staleMs: number): VpcView {
    if (staleMs <= 0 || this.#snapshots.length === 0) return this.#state;
    const t = this.#nowMs() - staleMs;
    let chosen = this.#snapshots[0]!.view;
    for (const s of this.#snapshots) {
      if (s.at > t) break;
      chosen = s.view;
    }
    return chosen;
  }
}
