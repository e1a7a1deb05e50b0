// `lab pod`: registers a pod in the lab's Kubernetes API (the emulator's kube slice), bound to a
// node, as the scheduler would. The caller then runs the plugin for it like a container runtime.
// With security groups it also plays the pod webhook (the vpc.amazonaws.com/pod-eni resource)
// and the resource controller (a branch ENI and the pod-eni annotation). `lab pod --delete`
// removes a pod, after which the controller releases its branch ENI.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type LabDescription, type LabLayout, labLayout } from './layout.ts';
import { labTimeout } from './timeouts.ts';
import { answerMessage, EmulatorRefused, unixHttp, unixJson } from './unix-http.ts';

export interface LabPodOptions {
  readonly name: string;
  readonly node: string;
  readonly namespace: string;
  readonly pod: string;
  readonly uid?: string;
  readonly securityGroups?: readonly string[];
}

const POD_ENI_RESOURCE = 'vpc.amazonaws.com/pod-eni';
/** The emulated controller tags a branch ENI with its pod's UID. */
const POD_UID_TAG = 'vpcnet-emulator/pod-uid';

export async function readDescription(layout: LabLayout, name: string): Promise<LabDescription> {
  const text = await readFile(layout.files.description, 'utf8').catch(() => {
    throw new Error(
      `lab ${name} is not up (no ${layout.files.description}); run \`vpcnetctl lab up --name ${name}\``,
    );
  });
  return JSON.parse(text) as LabDescription;
}

function podPath(namespace: string, pod?: string): string {
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`;
  return pod === undefined ? base : `${base}/${encodeURIComponent(pod)}`;
}

export async function labPod(opts: LabPodOptions): Promise<unknown> {
  const layout = labLayout(opts.name, 0);
  const description = await readDescription(layout, opts.name);
  const nodes = description.nodes.map((n) => n.name);
  if (!nodes.includes(opts.node)) {
    throw new Error(`lab ${opts.name} has no node ${JSON.stringify(opts.node)} (nodes: ${nodes.join(', ')})`);
  }
  const groups = opts.securityGroups ?? [];
  const container = {
    name: 'app',
    image: 'registry.k8s.io/pause:3.9',
    // What the security-groups-for-pods webhook injects into a pod that needs a branch ENI.
    ...(groups.length > 0 ? { resources: { limits: { [POD_ENI_RESOURCE]: '1' } } } : {}),
  };
  const body = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: opts.pod, namespace: opts.namespace, uid: opts.uid ?? randomUUID() },
    spec: { nodeName: opts.node, containers: [container] },
  };
  const socket = layout.emulator.adminSocket;
  const created = await unixJson(socket, 'POST', podPath(opts.namespace), body).catch((err: unknown) => {
    if (err instanceof EmulatorRefused && err.status === 409) {
      throw new Error(
        `pod ${opts.namespace}/${opts.pod} is registered already; remove it first: vpcnetctl lab pod --name ${opts.name} --delete --namespace ${opts.namespace} --pod ${opts.pod}`,
      );
    }
    throw err;
  });
  if (groups.length === 0) return created;
  const assigned = await unixHttp(socket, 'POST', '/admin/pod-eni', {
    namespace: opts.namespace,
    name: opts.pod,
    securityGroupIds: groups,
  });
  if (assigned.status !== 201) {
    // Leave nothing half-done: a retry after the cause is fixed starts from scratch.
    await unixHttp(socket, 'DELETE', podPath(opts.namespace, opts.pod)).catch(() => undefined);
    throw new Error(
      `pod ${opts.namespace}/${opts.pod} gets no branch ENI (so it was not registered): ${answerMessage(assigned.body)}`,
    );
  }
  return unixJson(socket, 'GET', podPath(opts.namespace, opts.pod));
}

export interface LabPodDeleteOptions {
  readonly name: string;
  readonly namespace: string;
  readonly pod: string;
}

export async function deleteLabPod(opts: LabPodDeleteOptions): Promise<void> {
  const layout = labLayout(opts.name, 0);
  await readDescription(layout, opts.name);
  const res = await unixHttp(layout.emulator.adminSocket, 'DELETE', podPath(opts.namespace, opts.pod));
  if (res.status === 404) throw new Error(`pod ${opts.namespace}/${opts.pod} not found`);
  if (res.status !== 200) {
    throw new Error(
      `deleting pod ${opts.namespace}/${opts.pod} failed (${res.status}): ${answerMessage(res.body)}`,
    );
  }
  const uid = (JSON.parse(res.body) as { metadata?: { uid?: unknown } }).metadata?.uid;
  if (typeof uid === 'string') await branchesReleased(layout, `${opts.namespace}/${opts.pod}`, uid);
}

const RELEASE_TIMEOUT_MS = 15_000;

/** Waits until the controller released the pod's branch ENIs, so their VLAN IDs are free on return. */
async function branchesReleased(layout: LabLayout, pod: string, uid: string): Promise<void> {
  const deadline = Date.now() + labTimeout(RELEASE_TIMEOUT_MS);
  for (;;) {
    const state = (await unixJson(layout.emulator.adminSocket, 'GET', '/admin/state')) as {
      enis: { eniId: string; tags: Record<string, string> }[];
    };
    const held = state.enis.filter((e) => e.tags[POD_UID_TAG] === uid).map((e) => e.eniId);
    if (held.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `pod ${pod} is deleted, but its branch ENIs ${held.join(', ')} were not released in 15 s`,
      );
    }
    await sleep(50);
  }
}
