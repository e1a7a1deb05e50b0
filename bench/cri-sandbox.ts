// Section "cri": pod sandboxes through a real runtime. Two private containerds of the same binary
// and the same pause image (test/real-clients/containerd-daemon.ts), one in the lab node's namespace
// with vpcnet's conflist, one in the reference's namespace with bridge + host-local, each driven
// over the CRI API as kubelet drives it: RunPodSandbox (CNI ADD), then StopPodSandbox and
// RemovePodSandbox (CNI DEL), timed per sandbox, the two runtimes taking turns.
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type LabNodeDesc, registerPod } from '../test/lab-fixture.ts';
import { gate } from '../test/real-clients/clients.ts';
import {
  criProtoPath,
  type PrivateContainerd,
  pauseImagePath,
  prepareContainerdDir,
  removeContainerdDir,
  startContainerd,
} from '../test/real-clients/containerd-daemon.ts';
import type { PodSandboxMetadata } from '../test/real-clients/cri.ts';
import { timed } from './stats.ts';
import { referenceBinDir, referenceConfList } from './targets.ts';

export interface SandboxTimes {
  readonly run: readonly number[];
  readonly stopRemove: readonly number[];
}

export interface CriFigures {
  readonly runtime: string;
  readonly vpcnet: SandboxTimes;
  readonly reference: SandboxTimes;
}

/** Fails (the bench cannot measure) when containerd or the real-client files are missing. */
export async function assertContainerdPresent(): Promise<void> {
  const g = await gate('containerd', [
    { program: 'containerd' },
    { program: 'containerd-shim-runc-v2' },
    { program: 'runc' },
    { program: 'ctr' },
    { file: criProtoPath },
    { file: pauseImagePath },
    { file: `${referenceBinDir}/loopback` },
  ]);
  g.assertPresent();
}

/**
 * vpcnet's containerd directory, a shared mount that must exist before `lab up` so that the agent's
 * mount namespace sees the netns files containerd mounts under it (containerd-daemon.ts).
 */
export function prepareVpcnetContainerdDir(prefix: string): Promise<string> {
  return prepareContainerdDir(prefix);
}

export { removeContainerdDir };

/** A "node" for the reference containerd: the reference's namespace and CNI dirs of its own. */
async function referenceNode(netns: string, workDir: string): Promise<LabNodeDesc> {
  const cniBinDir = join(workDir, 'cri-ref', 'bin');
  const cniConfDir = join(workDir, 'cri-ref', 'net.d');
  await mkdir(cniBinDir, { recursive: true });
  await mkdir(cniConfDir, { recursive: true });
  for (const p of ['bridge', 'host-local', 'portmap'])
    await copyFile(join(referenceBinDir, p), join(cniBinDir, p));
  // The same chain partner vpcnet's installed conflist has, so both runtimes run a whole chain alike.
  const list = referenceConfList('benchcri', 'cnibcri0', '10.78.0.0/16', join(workDir, 'cri-ref', 'ipam'), [
    { type: 'portmap', capabilities: { portMappings: true }, snat: true },
  ]);
  await writeFile(join(cniConfDir, '10-reference.conflist'), JSON.stringify(list));
  return { name: 'reference', netns, agentSocket: '', cniBinDir, cniConfDir };
}

interface Side {
  readonly containerd: PrivateContainerd;
  readonly before: (meta: PodSandboxMetadata) => Promise<void>;
  readonly times: { run: number[]; stopRemove: number[] };
}

async function oneSandbox(side: Side, meta: PodSandboxMetadata, keep: boolean): Promise<void> {
  await side.before(meta);
  const cri = side.containerd.cri;
  let id = '';
  const run = await timed(async () => {
    id = await cri.runPodSandbox(meta);
  });
  const stopRemove = await timed(async () => {
    await cri.stopPodSandbox(id);
    await cri.removePodSandbox(id);
  });
  if (keep) {
    side.times.run.push(run);
    side.times.stopRemove.push(stopRemove);
  }
}

export interface CriOptions {
  readonly labName: string;
  readonly node: LabNodeDesc;
  /** From prepareVpcnetContainerdDir, before the lab came up; removed here. */
  readonly vpcnetDir: string;
  readonly referenceNetns: string;
  readonly workDir: string;
  readonly sandboxes: number;
}

export async function measureCri(o: CriOptions): Promise<CriFigures> {
  const started: PrivateContainerd[] = [];
  let vpcnetDirOwned = true;
  try {
    const refNode = await referenceNode(o.referenceNetns, o.workDir);
    const refContainerd = await startContainerd(await prepareContainerdDir(`${o.labName}ref`), refNode);
    started.push(refContainerd);
    vpcnetDirOwned = false; // startContainerd removes its dir when it fails, and stop() always does
    const vpcContainerd = await startContainerd(o.vpcnetDir, o.node);
    started.push(vpcContainerd);
    const version = await vpcContainerd.cri.version();
    const reference: Side = {
      containerd: refContainerd,
      before: async () => {},
      times: { run: [], stopRemove: [] },
    };
    const vpcnet: Side = {
      containerd: vpcContainerd,
      // kubelet runs only pods the API server knows: register each, untimed.
      before: (meta) => registerPod(o.labName, o.node.name, meta.namespace, meta.name, meta.uid),
      times: { run: [], stopRemove: [] },
    };
    // One untimed sandbox each first: containerd's first sandbox pays for loading and caching.
    for (let i = -1; i < o.sandboxes; i++) {
      const meta = {
        name: `cri${i + 1}`,
        uid: `uid-${o.labName}-cri${i + 1}`,
        namespace: 'default',
        attempt: 0,
      };
      // Taking turns, and alternating who goes first, spreads the machine's noise over both.
      const order = i % 2 === 0 ? [vpcnet, reference] : [reference, vpcnet];
      for (const side of order) await oneSandbox(side, meta, i >= 0);
    }
    return {
      runtime: `${version.runtimeName} ${version.runtimeVersion}`,
      vpcnet: vpcnet.times,
      reference: reference.times,
    };
  } finally {
    for (const c of started.reverse()) await c.stop().catch(() => undefined);
    if (vpcnetDirOwned) await removeContainerdDir(o.vpcnetDir).catch(() => undefined);
  }
}
