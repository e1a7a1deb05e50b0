// How many EC2 calls the emulator answered, per action (and how many of them failed), so that a
// storm or a benchmark can state "EC2 calls per pod start" from what the cloud saw, not from the
// agent's own account of it.

export interface Ec2ActionCount {
  readonly calls: number;
  readonly errors: number;
  /**
   * DryRun calls (counted apart from `calls`: EC2 answers them with an error and they change
   * nothing); present once there was one.
   */
  readonly dryRuns?: number;
}

export class Ec2CallCounts {
  readonly #byAction = new Map<string, { calls: number; errors: number; dryRuns?: number }>();

  record(action: string, failed: boolean, dryRun = false): void {
    const c = this.#byAction.get(action) ?? { calls: 0, errors: 0 };
    if (dryRun) c.dryRuns = (c.dryRuns ?? 0) + 1;
    else {
      c.calls += 1;
      if (failed) c.errors += 1;
    }
    this.#byAction.set(action, c);
  }

  snapshot(): Record<string, Ec2ActionCount> {
    return Object.fromEntries([...this.#byAction].map(([a, c]) => [a, { ...c }]));
  }
}

/** Calls that may change the VPC: every action but the Describe* reads, dry runs left out. */
export function mutatingCalls(snapshot: Readonly<Record<string, Ec2ActionCount>>): number {
  return Object.entries(snapshot)
    .filter(([action]) => !action.startsWith('Describe'))
    .reduce((sum, [, c]) => sum + c.calls, 0);
}
