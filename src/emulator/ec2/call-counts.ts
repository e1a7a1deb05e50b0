// How many EC2 calls the emulator answered, per action (and how many of them failed), so that a
// storm or a benchmark can state "EC2 calls per pod start" from what the cloud saw, not from the
// agent's own account of it.

export interface Ec2ActionCount {
  readonly calls: number;
  readonly errors: number;
}

export class Ec2CallCounts {
  readonly #byAction = new Map<string, { calls: number; errors: number }>();

  record(action: string, failed: boolean): void {
    const c = this.#byAction.get(action) ?? { calls: 0, errors: 0 };
    c.calls += 1;
    if (failed) c.errors += 1;
    this.#byAction.set(action, c);
  }

  snapshot(): Record<string, Ec2ActionCount> {
    return Object.fromEntries([...this.#byAction].map(([a, c]) => [a, { ...c }]));
  }
}
