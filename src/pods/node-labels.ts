// Labels on the agent's own node: the agent says whether pods with security groups can be placed
// here (`vpc.amazonaws.com/has-trunk-attached`), which the VPC resource controller watches.
import type { KubeApiConfig } from './kube-api-config.ts';
import { type KubeClient, loadKubeClient, withTimeout } from './kube-client.ts';

export const HAS_TRUNK_LABEL = 'vpc.amazonaws.com/has-trunk-attached';

export interface NodeLabels {
  set(label: string, value: string): Promise<void>;
}

export function kubeNodeLabels(api: KubeApiConfig, nodeName: string, timeoutMs = 5000): NodeLabels {
  let client: KubeClient | undefined;
  return {
    async set(label, value) {
      client ??= await loadKubeClient(api);
      const { k8s, core } = client;
      await withTimeout(
        core.patchNode(
          { name: nodeName, body: { metadata: { labels: { [label]: value } } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        ),
        timeoutMs,
        `label node ${nodeName} ${label}=${value}`,
      );
    },
  };
}
