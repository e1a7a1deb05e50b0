// Test support: a node's conditions and taints in memory, every write recorded in order (what a
// readiness test asserts: which writes, when, and that a mode made none of a kind).
import type { NodeCondition, NodeConditions } from '../node-conditions.ts';
import type { NewTaint, NodeTaints } from '../node-taints.ts';

export class RecordingNode implements NodeConditions, NodeTaints {
  readonly conditions = new Map<string, NodeCondition>();
  readonly taints: NewTaint[] = [];
  /** Every write, as `condition <type>=<status>/<reason>`, `taint+ <key>` or `taint- <key>`. */
  readonly writes: string[] = [];
  /** The next write fails with this (an API that is down), once. */
  failNext: Error | undefined;

  #fail(): void {
    const err = this.failNext;
    this.failNext = undefined;
    if (err !== undefined) throw err;
  }

  async set(c: NodeCondition): Promise<void> {
    this.#fail();
    this.conditions.set(c.type, c);
    this.writes.push(`condition ${c.type}=${c.status}/${c.reason}`);
  }

  async add(t: NewTaint): Promise<'added' | 'present'> {
    this.#fail();
    if (this.taints.some((x) => x.key === t.key && x.effect === t.effect)) return 'present';
    this.taints.push(t);
    this.writes.push(`taint+ ${t.key}`);
    return 'added';
  }

  async remove(key: string): Promise<'removed' | 'absent'> {
    this.#fail();
    const before = this.taints.length;
    this.taints.splice(0, this.taints.length, ...this.taints.filter((t) => t.key !== key));
    if (this.taints.length === before) return 'absent';
    this.writes.push(`taint- ${key}`);
    return 'removed';
  }
}
