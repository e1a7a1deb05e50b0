// Labels on the agent's own node: the agent says whether pods with security groups can be placed
// here (`vpc.amazonaws.com/has-trunk-attached`), which the VPC resource controller watches.
import { errorText } from '../../infra/error-text.ts';
import type { KubeApiConfig } from '../kube-api-config.ts';
import { KubeClient } from '../kube-client.ts';

export const HAS_TRUNK_LABEL = 'vpc.amazonaws.com/has-trunk-attached';

export interface NodeLabels {
  set(label: string, value: string): Promise<void>;
}

export function kubeNodeLabels(api: KubeApiConfig, nodeName: string, timeoutMs = 5000): NodeLabels {
  const client = new KubeClient(api, { timeoutMs });
  return {
    async set(label, value) {
      try {
        await client.mergePatchNode(nodeName, { metadata: { labels: { [label]: value } } });
      } catch (err) {
        throw new Error(`label node ${nodeName} ${label}=${value}: ${errorText(err)}`, { cause: err });
      }
    },
  };
}
