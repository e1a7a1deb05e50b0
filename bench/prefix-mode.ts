// Benchmark (not a test): prefix mode against secondary-IP mode, each in its own one-node lab
// (t3.medium) measured in the same run: ADD p50 over a node's pod starts (through the whole CNI
// chain, as the lab tests run it) and the EC2 calls the agent made for them, per 100 pod starts.
// Each lab starts with WARM_IP_TARGET unset (WARM_ENI_TARGET=1, WARM_PREFIX_TARGET=1, the
// defaults), so the figures are those of the defaults users switch with.
//
//   node --import tsx bench/prefix-mode.ts [--pods 100]
import { parseArgs } from 'node:util';
import { labLayout } from '../src/lab/layout.ts';
import { unixJson } from '../src/lab/unix-http.ts';
import { addPod, cni, labDown, labUp, newPod, sh, type TestPod, uniqueLabName } from '../test/lab-fixture.ts';
import { percentile } from './stats.ts';

interface ModeFigures {
  readonly mode: string;
  readonly addP50Ms: number;
  readonly ec2CallsPer100: number;
  readonly byAction: Record<string, number>;
}

async function ec2Calls(lab: string): Promise<Record<string, number>> {
  const state = (await unixJson(labLayout(lab, 1).emulator.adminSocket, 'GET', '/admin/state')) as {
    ec2Calls: Record<string, { calls: number }>;
  };
  return Object.fromEntries(Object.entries(state.ec2Calls).map(([k, v]) => [k, v.calls]));
}

async function measure(mode: 'secondary' | 'prefix', count: number): Promise<ModeFigures> {
  const name = uniqueLabName(mode === 'prefix' ? 'pxbp' : 'pxbs');
  await labDown(name);
  const lab = await labUp(name, [
    '--instance-type',
    't3.medium',
    '--agent-env',
    `ENABLE_PREFIX_DELEGATION=${mode === 'prefix'}`,
    '--agent-env',
    'VPCNET_ADD_WAIT_SECONDS=60',
  ]);
  const node = lab.nodes[0]!;
  const pods: TestPod[] = [];
  try {
    const before = await ec2Calls(name);
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const pod = await newPod(name, `b${i}`);
      pods.push(pod);
      const t0 = performance.now();
      await addPod(node, pod);
      times.push(performance.now() - t0);
    }
    await new Promise((r) => setTimeout(r, 6000)); // one more pool pass settles the warm target
    const after = await ec2Calls(name);
    const byAction: Record<string, number> = {};
    for (const [k, v] of Object.entries(after)) {
      const d = v - (before[k] ?? 0);
      if (d > 0) byAction[k] = d;
    }
    const total = Object.values(byAction).reduce((a, b) => a + b, 0);
    return {
      mode: `${mode} (${count} pods)`,
      addP50Ms: percentile(times, 50),
      ec2CallsPer100: (total * 100) / count,
      byAction,
    };
  } finally {
    for (const pod of pods) await cni(node, 'DEL', pod).catch(() => undefined);
    for (const pod of pods) await sh(['ip', 'netns', 'del', pod.netnsName]).catch(() => undefined);
    await labDown(name);
  }
}

const { values } = parseArgs({ options: { pods: { type: 'string', default: '100' } } });
const pods = Number(values.pods);
// Secondary-IP mode on a t3.medium holds 15 pods (3 ENIs × 5): both modes are measured at 15, and
// prefix mode also at `--pods`.
const secondary = await measure('secondary', 15);
const prefix = await measure('prefix', 15);
const prefixMany = await measure('prefix', pods);
for (const f of [secondary, prefix, prefixMany]) {
  console.log(
    `${f.mode.padEnd(22)} ADD p50 ${f.addP50Ms.toFixed(1)} ms   EC2 calls per 100 pod starts ${f.ec2CallsPer100.toFixed(1)}   ${JSON.stringify(f.byAction)}`,
  );
}
console.log(`prefix / secondary ADD p50 at 15 pods: ${(prefix.addP50Ms / secondary.addP50Ms).toFixed(2)}x`);
