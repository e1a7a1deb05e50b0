// Agents whose states are given per read, for tests of the audit's two-read rule: the first
// read of the cluster gets each node's first state, the next read its second, and so on (the last
// one repeats). A state is what an agent's /v1/state answers; an Error is a read that fails with it.
import type { AgentSource } from '../audit/sources.ts';

export function scriptedAgents(
  states: Readonly<Record<string, readonly unknown[]>>,
): () => Promise<AgentSource[]> {
  let read = 0;
  return () => {
    const k = read++;
    return Promise.resolve(
      Object.entries(states).map(([node, list]) => ({
        node,
        state: () => {
          const v = list[Math.min(k, list.length - 1)];
          return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
        },
      })),
    );
  };
}

/** Agents that answer after `delayMs`, counting how many are being read at once at most. */
export function countingAgents(
  nodes: readonly string[],
  delayMs: number,
): { agents: () => Promise<AgentSource[]>; readonly most: number; readonly reads: number } {
  let now = 0;
  let most = 0;
  let reads = 0;
  return {
    agents: () =>
      Promise.resolve(
        nodes.map((node) => ({
          node,
          async state() {
            reads++;
            most = Math.max(most, ++now);
            await new Promise((r) => setTimeout(r, delayMs));
            now--;
            return { instanceId: `i-${node}`, pool: {}, attachments: [], bindings: [] };
          },
        })),
      ),
    get most() {
      return most;
    },
    get reads() {
      return reads;
    },
  };
}
