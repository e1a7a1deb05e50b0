// What the benchmark drives: a CNI configuration installed on a "node" (a network namespace), exec'd
// exactly as a runtime would (src/lab/cni-runtime.ts). vpcnet's target is a lab node; the
// reference is Debian's bridge + host-local in a namespace of the bench's own.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runToSuccess } from '../src/infra/process.ts';
import { type CniCall, type NetConfList, readConfList, runChain } from '../src/lab/cni-runtime.ts';
import type { LabNodeDesc } from '../test/lab-fixture.ts';

export interface Target {
  readonly label: string;
  readonly nodeNetns: string;
  readonly cniBinDir: string;
  readonly list: NetConfList;
}

/** Debian's reference plugins, where `apt-get install containernetworking-plugins` puts them. */
export const referenceBinDir = '/usr/lib/cni';

export function cniCall(t: Target, command: 'ADD' | 'DEL', containerId: string, netnsPath: string): CniCall {
  return {
    nodeNetns: t.nodeNetns,
    cniBinDir: t.cniBinDir,
    command,
    containerId,
    netns: netnsPath,
    ifName: 'eth0',
    // IgnoreUnknown, as containerd sends it: the reference plugins refuse unknown CNI_ARGS otherwise.
    args: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'bench', K8S_POD_NAME: containerId },
  };
}

/** ADD or DEL of `containerId`'s eth0 through the target's whole chain; rejects when a plugin fails. */
export function runPodCommand(
  t: Target,
  command: 'ADD' | 'DEL',
  containerId: string,
  netnsPath: string,
): Promise<unknown> {
  return runChain(cniCall(t, command, containerId, netnsPath), t.list);
}

/** The reference's conflist: a bridge that is the pods' gateway, addresses from host-local. */
export function referenceConfList(
  name: string,
  bridge: string,
  subnet: string,
  dataDir: string,
  partners: readonly Record<string, unknown>[] = [],
): NetConfList {
  return {
    cniVersion: '1.0.0',
    name,
    plugins: [
      {
        type: 'bridge',
        bridge,
        isGateway: true,
        ipMasq: false,
        ipam: { type: 'host-local', ranges: [[{ subnet }]], dataDir },
      },
      ...partners,
    ],
  };
}

/** Creates namespace `netns` and the reference's conflist in `dir`; the caller removes the namespace. */
export async function referenceTarget(netns: string, dir: string): Promise<Target> {
  await runToSuccess(['ip', 'netns', 'add', netns]);
  // containerd (section cri) binds its streaming server to 127.0.0.1 in this namespace.
  await runToSuccess(['ip', '-n', netns, 'link', 'set', 'lo', 'up']);
  const list = referenceConfList('benchref', 'cnibench0', '10.77.0.0/16', join(dir, 'ipam'));
  await writeFile(join(dir, 'ref.conflist'), JSON.stringify(list));
  return { label: 'reference bridge+host-local', nodeNetns: netns, cniBinDir: referenceBinDir, list };
}

/**
 * vpcnet's plugin alone: the installed conflist chains portmap after it (as upstream's 10-aws
 * does), a partner the reference's bridge + host-local do not have here, so the ops and fill
 * sections compare the network plugins themselves. The CRI section runs both whole, each with
 * portmap (cri-sandbox.ts).
 */
export async function vpcnetTarget(node: LabNodeDesc): Promise<Target> {
  const installed = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
  return {
    label: 'vpcnet',
    nodeNetns: node.netns,
    cniBinDir: node.cniBinDir,
    list: { ...installed, plugins: installed.plugins.slice(0, 1) },
  };
}

/** Pod sandboxes: network namespaces named `${prefix}${i}`, created at once, removed by `remove`. */
export interface Sandboxes {
  readonly names: readonly string[];
  path(i: number): string;
  remove(): Promise<void>;
}

export async function createSandboxes(prefix: string, count: number): Promise<Sandboxes> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  const made: string[] = [];
  const remove = async (): Promise<void> => {
    for (const n of made) await runToSuccess(['ip', 'netns', 'del', n]).catch(() => undefined);
  };
  try {
    for (const n of names) {
      await runToSuccess(['ip', 'netns', 'add', n]);
      made.push(n);
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { names, path: (i) => `/var/run/netns/${names[i]}`, remove };
}
