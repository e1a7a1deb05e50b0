// The node's CNINode with another writer in the way: before the agent's next create or feature
// write goes through, `other` runs (the resource controller creating the CNINode, or adding a
// feature of its own, through the same API), so the agent's write is the one that finds the object
// changed since it read it. Everything else is the real client's.
import type { CniNodeFeature, CniNodeState, CniNodes } from '../../pods/node/cni-node.ts';

export interface RacingCniNodes extends CniNodes {
  /** Writes that `other` got in front of. */
  readonly raced: number;
}

export function racingCniNodes(inner: CniNodes, other: () => Promise<void>): RacingCniNodes {
  let raced = 0;
  let armed = true;
  async function race(): Promise<void> {
    if (!armed) return;
    armed = false;
    raced++;
    await other();
  }
  return {
    get raced() {
      return raced;
    },
    read: () => inner.read(),
    async create(features: readonly CniNodeFeature[]): Promise<CniNodeState> {
      await race();
      return inner.create(features);
    },
    async setFeatures(resourceVersion: string, features: readonly CniNodeFeature[]): Promise<CniNodeState> {
      await race();
      return inner.setFeatures(resourceVersion, features);
    },
  };
}
