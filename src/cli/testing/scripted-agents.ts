// Agents whose states are given per read, for tests of the audit's two-read rule: the first
// read of the cluster gets each node's first state, the next read its second, and so on (the last
// one repeats). A state is what an agent's /v1/state answers.
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
        state: () => Promise.resolve(list[Math.min(k, list.length - 1)]),
      })),
    );
  };
}
