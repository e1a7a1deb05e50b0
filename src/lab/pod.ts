// `lab pod`: registers a pod in the lab's Kubernetes API (the emulator's kube slice), bound to a
// node, as the scheduler would. The caller then runs the plugin for it like a container runtime.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { type LabDescription, labLayout } from './layout.ts';
import { unixJson } from './unix-http.ts';

export interface LabPodOptions {
  readonly name: string;
  readonly node: string;
  readonly namespace: string;
  readonly pod: string;
  readonly uid?: string;
  readonly securityGroups?: readonly string[];
}

export async function labPod(opts: LabPodOptions): Promise<unknown> {
  const layout = labLayout(opts.name, 0);
  const text = await readFile(layout.files.description, 'utf8').catch(() => {
    throw new Error(
      `lab ${opts.name} is not up (no ${layout.files.description}); run \`vpcnetctl lab up --name ${opts.name}\``,
    );
  });
  const description = JSON.parse(text) as LabDescription;
  const nodes = description.nodes.map((n) => n.name);
  if (!nodes.includes(opts.node)) {
    throw new Error(`lab ${opts.name} has no node ${JSON.stringify(opts.node)} (nodes: ${nodes.join(', ')})`);
  }
  if (opts.securityGroups !== undefined && opts.securityGroups.length > 0) {
    // Branch ENIs (the resource controller's part) come with trunk support in the emulator.
    throw new Error('--security-groups needs pod-ENI support (trunk ENIs), not available yet');
  }
  const body = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: opts.pod, namespace: opts.namespace, uid: opts.uid ?? randomUUID() },
    spec: { nodeName: opts.node, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.9' }] },
  };
  return unixJson(
    layout.emulator.adminSocket,
    'POST',
    `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/pods`,
    body,
  );
}
