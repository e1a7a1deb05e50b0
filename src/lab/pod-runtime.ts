// The lab's DaemonSet pods and what `kubectl exec` into them runs. A cluster's vpcnet pods are the
// DaemonSet's (deploy/base/daemonset.yaml): in kube-system, labelled k8s-app=vpcnet, one per node,
// with a container `vpcnet` whose image holds the programs in /opt/vpcnet/bin. The lab registers
// one such pod per node in the emulated API, and the emulator's exec (src/emulator/kube/pod-exec.ts)
// asks this runtime what a command in it is: the checkout's built bin/<program> for
// /opt/vpcnet/bin/<program>, run by this Node (the image's runtime) inside the node's network
// namespace, with the environment the node's agent has (its socket's path among it, which the
// image's programs read as the container's would). Anything else is refused, as a Status.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { KubeError } from '../emulator/kube/object-store.ts';
import type { JsonObject } from '../emulator/kube/objects.ts';
import { isJsonObject } from '../emulator/kube/objects.ts';
import type { ContainerRuntime, ExecProcess, ExecRequest } from '../emulator/kube/pod-exec.ts';
import { type LabNode, labLayout } from './layout.ts';
import { agentEnv, type PodEniSettings } from './processes/agents.ts';

/** The vpcnet DaemonSet as deploy/ makes it: where its pods are and how they are labelled. */
export const VPCNET_DAEMONSET = {
  namespace: 'kube-system',
  name: 'vpcnet',
  labels: { 'app.kubernetes.io/name': 'vpcnet', 'k8s-app': 'vpcnet' },
  container: 'vpcnet',
  /** Where the image has the project's programs (image/Containerfile: COPY bin/ /opt/vpcnet/bin/). */
  imageBinDir: '/opt/vpcnet/bin',
} as const;

/** A lab node's DaemonSet pod: named after its node, so that a restarted lab names it the same. */
export function daemonSetPodName(node: Pick<LabNode, 'name'>): string {
  return `${VPCNET_DAEMONSET.name}-${node.name}`;
}

/** The pod object the lab registers for `node`, whose primary address is `hostIp`. */
export function daemonSetPod(node: Pick<LabNode, 'name'>, hostIp: string): JsonObject {
  const d = VPCNET_DAEMONSET;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: daemonSetPodName(node),
      namespace: d.namespace,
      labels: { ...d.labels },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          name: d.name,
          uid: `lab-daemonset-${d.name}`,
          controller: true,
        },
      ],
    },
    spec: {
      nodeName: node.name,
      hostNetwork: true,
      containers: [{ name: d.container, image: 'vpcnet', command: [`${d.imageBinDir}/vpcnetd`] }],
    },
    status: {
      phase: 'Running',
      hostIP: hostIp,
      podIP: hostIp,
      podIPs: [{ ip: hostIp }],
    },
  };
}

function refuse(message: string): never {
  throw new KubeError(400, 'BadRequest', message);
}

function isDaemonSetPod(request: ExecRequest): boolean {
  const meta = request.pod.metadata;
  const labels = isJsonObject(meta) && isJsonObject(meta.labels) ? meta.labels : {};
  const owners = isJsonObject(meta) && Array.isArray(meta.ownerReferences) ? meta.ownerReferences : [];
  return (
    request.namespace === VPCNET_DAEMONSET.namespace &&
    labels['k8s-app'] === VPCNET_DAEMONSET.labels['k8s-app'] &&
    owners.some((o) => isJsonObject(o) && o.kind === 'DaemonSet' && o.name === VPCNET_DAEMONSET.name)
  );
}

/** The lab node a pod's spec.nodeName names (node1..node32), or undefined. */
function labNodeOf(lab: string, nodeName: unknown): LabNode | undefined {
  const m = typeof nodeName === 'string' ? /^node([1-9]\d?)$/.exec(nodeName) : null;
  const k = Number(m?.[1]);
  if (!Number.isInteger(k) || k > 32) return undefined;
  return labLayout(lab, k).nodes[k - 1];
}

/** Is bin/<program> a Node bundle (scripts/build.mjs gives those a node shebang) or native? */
function isNodeBundle(path: string): boolean {
  const head = Buffer.alloc(64);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, head, 0, head.length, 0);
  } finally {
    closeSync(fd);
  }
  return head.toString('utf8').startsWith('#!/usr/bin/env node');
}

/** Where `ip netns` keeps the namespaces' files (lab nodes' among them). */
const NETNS_DIR = '/var/run/netns';

export interface LabRuntimeOptions {
  /** The agents run with pod ENIs (`lab up --pod-eni`): so does what exec runs beside them. */
  readonly podEni?: PodEniSettings | undefined;
  /** Where the nodes' namespace files are (default /var/run/netns; a test's own directory). */
  readonly netnsDir?: string;
}

/**
 * What an exec into lab `lab`'s DaemonSet pods runs; `repoRoot`'s bin/ is the image's
 * /opt/vpcnet/bin.
 */
export function labContainerRuntime(
  lab: string,
  repoRoot: string,
  options: LabRuntimeOptions = {},
): ContainerRuntime {
  const netnsDir = options.netnsDir ?? NETNS_DIR;
  return (request): ExecProcess => {
    const pod = `${request.namespace}/${request.podName}`;
    if (!isDaemonSetPod(request))
      refuse(
        `pod ${pod} runs no container in lab ${lab}: exec reaches the vpcnet DaemonSet's pods only (${VPCNET_DAEMONSET.namespace}, k8s-app=${VPCNET_DAEMONSET.labels['k8s-app']})`,
      );
    if (request.container !== VPCNET_DAEMONSET.container)
      refuse(`container ${request.container} is not valid for pod ${request.podName}`);
    const spec = request.pod.spec;
    const nodeName = isJsonObject(spec) ? spec.nodeName : undefined;
    const node = labNodeOf(lab, nodeName);
    if (node === undefined)
      refuse(`pod ${pod} is on ${JSON.stringify(nodeName ?? null)}, no node of lab ${lab}`);
    const [command = '', ...args] = request.command;
    const prefix = `${VPCNET_DAEMONSET.imageBinDir}/`;
    const program = command.startsWith(prefix) ? command.slice(prefix.length) : '';
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(program) || program === 'package.json')
      refuse(
        `${JSON.stringify(command)} does not run in lab ${lab}'s ${VPCNET_DAEMONSET.container} container: only the image's programs in ${prefix} do`,
      );
    const built = join(repoRoot, 'bin', program);
    if (!existsSync(built))
      refuse(`${command}: no such program in the image (${built} is not built: npm run build)`);
    const netnsPath = join(netnsDir, node.netns);
    if (!existsSync(netnsPath))
      refuse(`pod ${pod}: node ${node.name}'s network namespace ${node.netns} is gone`);
    const layout = labLayout(lab, Number(node.name.slice('node'.length)));
    const env = {
      ...agentEnv(layout, node, options.podEni),
      // What the DaemonSet gives the container besides its ConfigMap.
      MY_NODE_NAME: node.name,
      PATH: `${join(repoRoot, 'bin')}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
    };
    const run = isNodeBundle(built) ? [process.execPath, built] : [built];
    return { file: 'nsenter', args: [`--net=${netnsPath}`, ...run, ...args], env, cwd: '/' };
  };
}
