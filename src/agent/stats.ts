// Per-command operation counters and service times, for introspection and the benchmark.
export interface CommandStats {
  readonly ok: number;
  readonly failed: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly maxMs: number;
}

const KEEP = 2048;

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)]!;
}

export class OperationStats {
  readonly #by = new Map<string, { ok: number; failed: number; times: number[] }>();

  record(command: string, ok: boolean, ms: number): void {
    let s = this.#by.get(command);
    if (!s) {
      s = { ok: 0, failed: 0, times: [] };
      this.#by.set(command, s);
    }
    if (ok) s.ok++;
    else s.failed++;
    s.times.push(ms);
    if (s.times.length > KEEP) s.times.splice(0, s.times.length - KEEP);
  }

  snapshot(): Record<string, CommandStats> {
    const out: Record<string, CommandStats> = {};
    for (const [cmd, s] of this.#by) {
      const sorted = [...s.times].sort((a, b) => a - b);
      out[cmd] = {
        ok: s.ok,
        failed: s.failed,
        p50Ms: Number(percentile(sorted, 50).toFixed(2)),
        p95Ms: Number(percentile(sorted, 95).toFixed(2)),
        maxMs: Number((sorted[sorted.length - 1] ?? 0).toFixed(2)),
      };
    }
    return out;
  }
}

/** Events an operator counts: teardowns the ownership rule prevented, branch ENI hand-overs. */
export type AgentEvent = 'preventedTeardowns' | 'holderTakeovers' | 'supersededBindings';

/**
 * Why a pod-eni annotation was refused (docs/design.md, Trust boundaries): EC2 does not show the
 * branch ENI on this node's trunk, or contradicts a field; its address is the node's or a regular
 * pod's; another live pod holds its VLAN ID, address or ENI; the API could not say.
 */
export type AnnotationRejection =
  | 'notOnTrunk'
  | 'contradictsEc2'
  | 'regularAddress'
  | 'heldByLivePod'
  | 'apiUnreachable';

export const ANNOTATION_REJECTIONS: readonly AnnotationRejection[] = [
  'notOnTrunk',
  'contradictsEc2',
  'regularAddress',
  'heldByLivePod',
  'apiUnreachable',
];

export class AgentCounters {
  readonly #counts = new Map<AgentEvent, number>();
  readonly #rejected = new Map<AnnotationRejection, number>();

  rejectAnnotation(reason: AnnotationRejection): void {
    this.#rejected.set(reason, (this.#rejected.get(reason) ?? 0) + 1);
  }

  /** Refused pod-eni annotations, by reason (every reason listed, zero included). */
  rejectedAnnotations(): Record<AnnotationRejection, number> {
    return Object.fromEntries(ANNOTATION_REJECTIONS.map((r) => [r, this.#rejected.get(r) ?? 0])) as Record<
      AnnotationRejection,
      number
    >;
  }

  count(event: AgentEvent): void {
    this.#counts.set(event, (this.#counts.get(event) ?? 0) + 1);
  }

  get(event: AgentEvent): number {
    return this.#counts.get(event) ?? 0;
  }

  snapshot(): Record<AgentEvent, number> {
    return {
      preventedTeardowns: this.get('preventedTeardowns'),
      holderTakeovers: this.get('holderTakeovers'),
      supersededBindings: this.get('supersededBindings'),
    };
  }
}
