// Taints on the agent's own node: the agent removes its startup taint once it can serve pods
// (src/agent/loops/startup-taint.ts), and puts on and takes off `vpcnet.io/ip-exhausted` when
// asked to (src/agent/loops/node-readiness.ts). The node's other taints are kept: the patch is a
// JSON patch that tests what it read before it removes or adds, so a taint another controller
// added or removed meanwhile makes the test fail (the caller reads again and retries) instead of
// being overwritten, as a merge patch of the whole `spec.taints` list would do.
import type { KubeApiConfig } from './kube-api-config.ts';
import { KubeClient } from './kube-client.ts';

export const JSON_PATCH = 'application/json-patch+json';

export interface NodeTaints {
  /** Removes the taint with `key` (every effect of it); `absent` when the node had none. */
  remove(key: string): Promise<'removed' | 'absent'>;
  /** Adds `taint`; `present` when the node has a taint with its key and effect already. */
  add(taint: NewTaint): Promise<'added' | 'present'>;
}

export interface NewTaint {
  readonly key: string;
  readonly effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  readonly value?: string;
}

interface Taint {
  readonly key: string;
  readonly [field: string]: unknown;
}

/** The node's `spec.taints`, parsed at the edge; a node without the field has none. */
export function taintsOf(node: unknown, nodeName: string): readonly Taint[] {
  const spec = (node as { spec?: { taints?: unknown } } | undefined)?.spec;
  const taints = spec?.taints;
  if (taints === undefined || taints === null) return [];
  if (!Array.isArray(taints)) throw new Error(`node ${nodeName}: spec.taints is not a list`);
  return taints.map((t: unknown, i) => {
    const key = (t as { key?: unknown } | null)?.key;
    if (typeof key !== 'string') throw new Error(`node ${nodeName}: spec.taints[${i}] has no key`);
    return t as Taint;
  });
}

/**
 * The JSON patch removing every taint with `key` from `taints`: a test and a remove per element,
 * highest index first so the indexes stay right.
 */
export function taintRemovalPatch(taints: readonly Taint[], key: string): unknown[] {
  const ops: unknown[] = [];
  for (let i = taints.length - 1; i >= 0; i--) {
    if (taints[i]?.key !== key) continue;
    ops.push({ op: 'test', path: `/spec/taints/${i}`, value: taints[i] });
    ops.push({ op: 'remove', path: `/spec/taints/${i}` });
  }
  return ops;
}

/**
 * The JSON patch adding `taint` to `taints` (the list read): the list is tested whole first, so a
 * taint someone added or removed since the read fails the patch (422) rather than being lost.
 */
export function taintAdditionPatch(taints: readonly Taint[], present: boolean, taint: NewTaint): unknown[] {
  const value = {
    key: taint.key,
    ...(taint.value === undefined ? {} : { value: taint.value }),
    effect: taint.effect,
  };
  if (!present) return [{ op: 'add', path: '/spec/taints', value: [value] }];
  return [
    { op: 'test', path: '/spec/taints', value: taints },
    { op: 'add', path: '/spec/taints/-', value },
  ];
}

export function kubeNodeTaints(api: KubeApiConfig, nodeName: string, timeoutMs = 5000): NodeTaints {
  const client = new KubeClient(api, { timeoutMs });
  const path = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  return {
    async remove(key) {
      const ops = taintRemovalPatch(taintsOf(await client.getNode(nodeName), nodeName), key);
      if (ops.length === 0) return 'absent';
      await client.request('PATCH', path, ops, JSON_PATCH);
      return 'removed';
    },
    async add(taint) {
      const node = await client.getNode(nodeName);
      const taints = taintsOf(node, nodeName);
      if (taints.some((t) => t.key === taint.key && t.effect === taint.effect)) return 'present';
      const listed = Array.isArray((node as { spec?: { taints?: unknown } } | undefined)?.spec?.taints);
      await client.request('PATCH', path, taintAdditionPatch(taints, listed, taint), JSON_PATCH);
      return 'added';
    },
  };
}
