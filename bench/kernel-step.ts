// Section "kernel": the kernel step of an ADD alone, as the agent makes it (the pod plan through the
// resident helper, bin/vpcnet-netlink), for N pods one after another and then all N at once, in
// namespaces of the bench's own. The kernel takes its RTNL lock for every change in any namespace,
// so N steps at once cannot finish before N times the work of one: this is the floor under the
// agent's service time with N in flight, whatever the agent itself does.
import { join } from 'node:path';
import { Dataplane } from '../src/dataplane/dataplane.ts';
import { NetlinkKernel } from '../src/dataplane/netlink/netlink-kernel.ts';
import { runToSuccess } from '../src/infra/process.ts';
import { planRegularPod } from '../src/plan/pod-plan.ts';
import { percentile } from './stats.ts';
import { createSandboxes } from './targets.ts';

export interface KernelStep {
  readonly pods: number;
  readonly sequentialP50Ms: number;
  readonly concurrentWallMs: number;
  readonly concurrentP50Ms: number;
  readonly concurrentP99Ms: number;
}

function plan(i: number) {
  return planRegularPod({
    key: { network: 'bench', containerId: `kstep${i}`, ifName: 'eth0' },
    vethPrefix: 'eni',
    ip: `10.97.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    eniId: 'eni-bench',
    routeTable: 254,
    mtu: 9001,
    snat: true,
  });
}

/** Creates (timed) and removes (untimed) N pod plans, in turn and then all at once. */
export async function measureKernelStep(repoRoot: string, prefix: string, pods: number): Promise<KernelStep> {
  const nodeNetns = `${prefix}node`;
  await runToSuccess(['ip', 'netns', 'add', nodeNetns]);
  const sandboxes = await createSandboxes(`${prefix}p`, pods).catch(async (err: unknown) => {
    await runToSuccess(['ip', 'netns', 'del', nodeNetns]).catch(() => undefined);
    throw err;
  });
  const kernel = new NetlinkKernel({
    program: join(repoRoot, 'bin', 'vpcnet-netlink'),
    hostNetns: `/var/run/netns/${nodeNetns}`,
  });
  try {
    await kernel.setupSnat({ vpcCidrs: ['10.97.0.0/16'], snatSource: '10.97.255.254' });
    const dp = new Dataplane(kernel);
    const ids = Array.from({ length: pods }, (_, i) => i);
    const create = async (i: number) => {
      const started = performance.now();
      await dp.create(sandboxes.path(i), plan(i));
      return performance.now() - started;
    };
    const removeAll = () => Promise.all(ids.map((i) => dp.remove(plan(i))));
    const sequential: number[] = [];
    for (const i of ids) sequential.push(await create(i));
    await removeAll();
    const started = performance.now();
    const concurrent = await Promise.all(ids.map(create));
    const concurrentWallMs = performance.now() - started;
    await removeAll();
    return {
      pods,
      sequentialP50Ms: percentile(sequential, 50),
      concurrentWallMs,
      concurrentP50Ms: percentile(concurrent, 50),
      concurrentP99Ms: percentile(concurrent, 99),
    };
  } finally {
    await kernel.close();
    await sandboxes.remove();
    await runToSuccess(['ip', 'netns', 'del', nodeNetns]).catch(() => undefined);
  }
}

export function kernelStepLines(k: KernelStep): string[] {
  return [
    `kernel: an ADD's kernel step alone through the helper (ms), ${k.pods} pods in namespaces of the bench's own`,
    `  one after another: p50 ${k.sequentialP50Ms.toFixed(2)};` +
      ` all ${k.pods} at once: wall ${k.concurrentWallMs.toFixed(1)}, p50 ${k.concurrentP50Ms.toFixed(1)},` +
      ` p99 ${k.concurrentP99Ms.toFixed(1)} (the kernel's share of the service time with ${k.pods} in flight)`,
  ];
}
