// How aws-node names a pod's host veth: its prefix (AWS_VPC_K8S_CNI_VETHPREFIX, "eni" by default)
// and the first 11 hex digits of the SHA-1 of "<namespace>.<name>" (the name Calico expects too).
// Adoption looks for exactly this name: a veth of that name routed to the checkpoint's address is
// aws-node's pod, never one of vpcnet's own (whose names hash the attachment key).
import { createHash } from 'node:crypto';

export const AWS_NODE_DEFAULT_VETH_PREFIX = 'eni';

export function awsNodeHostVethName(prefix: string, namespace: string, name: string): string {
  const digest = createHash('sha1').update(`${namespace}.${name}`).digest('hex');
  return `${prefix}${digest.slice(0, 11)}`;
}
