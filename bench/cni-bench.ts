// Benchmark (not a test): vpcnet against Debian's reference bridge + host-local plugins, both
// measured in the same run on this machine, both exec'd exactly as a runtime would (inside a node
// namespace, one process per operation). Prints p50/p95 of sequential ADD and DEL over N pods, a
// concurrent burst, vpcnet's agent-side service time and RSS, and the ratios vpcnet / reference.
//
//   npm run bench -- [--pods 100] [--burst 50]
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runToSuccess } from '../src/infra/process.ts';
import {
  type CniCall,
  execPlugin,
  type NetConfList,
  readConfList,
  runChain,
} from '../src/lab/cni-runtime.ts';
import { agentState, labDown, labUp, repoRoot, uniqueLabName } from '../test/lab-fixture.ts';

const { values } = parseArgs({
  options: { pods: { type: 'string', default: '100' }, burst: { type: 'string', default: '50' } },
});
const PODS = Number(values.pods);
const BURST = Number(values.burst);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? 0;
}

interface Series {
  add: number[];
  del: number[];
  burstAddWallMs: number;
  burstDelWallMs: number;
}

interface Target {
  readonly label: string;
  readonly nodeNetns: string;
  readonly cniBinDir: string;
  readonly list: NetConfList;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

function call(t: Target, command: 'ADD' | 'DEL', id: string, netns: string): CniCall {
  return {
    nodeNetns: t.nodeNetns,
    cniBinDir: t.cniBinDir,
    command,
    containerId: id,
    netns,
    ifName: 'eth0',
    // IgnoreUnknown, as containerd sends it: the reference plugins refuse unknown CNI_ARGS otherwise.
    args: { IgnoreUnknown: '1', K8S_POD_NAMESPACE: 'bench', K8S_POD_NAME: id },
  };
}

async function measure(t: Target, podPrefix: string): Promise<Series> {
  const names = Array.from({ length: Math.max(PODS, BURST) }, (_, i) => `${podPrefix}${i}`);
  for (const n of names) await runToSuccess(['ip', 'netns', 'add', n]);
  try {
    const add: number[] = [];
    const del: number[] = [];
    for (let i = 0; i < PODS; i++)
      add.push(await timed(() => runChain(call(t, 'ADD', `seq${i}`, `/var/run/netns/${names[i]}`), t.list)));
    for (let i = 0; i < PODS; i++)
      del.push(await timed(() => runChain(call(t, 'DEL', `seq${i}`, `/var/run/netns/${names[i]}`), t.list)));
    const burst = names.slice(0, BURST);
    const burstAddWallMs = await timed(() =>
      Promise.all(burst.map((n, i) => runChain(call(t, 'ADD', `burst${i}`, `/var/run/netns/${n}`), t.list))),
    );
    const burstDelWallMs = await timed(() =>
      Promise.all(burst.map((n, i) => runChain(call(t, 'DEL', `burst${i}`, `/var/run/netns/${n}`), t.list))),
    );
    return { add, del, burstAddWallMs, burstDelWallMs };
  } finally {
    for (const n of names) await runToSuccess(['ip', 'netns', 'del', n]).catch(() => {});
  }
}

async function referenceTarget(ns: string, dir: string): Promise<Target> {
  await runToSuccess(['ip', 'netns', 'add', ns]);
  const list: NetConfList = {
    cniVersion: '1.0.0',
    name: 'benchref',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cnibench0',
        isGateway: true,
        ipMasq: false,
        ipam: { type: 'host-local', ranges: [[{ subnet: '10.77.0.0/16' }]], dataDir: join(dir, 'ipam') },
      },
    ],
  };
  await writeFile(join(dir, 'ref.conflist'), JSON.stringify(list));
  return { label: 'reference bridge+host-local', nodeNetns: ns, cniBinDir: '/usr/lib/cni', list };
}

function row(label: string, v: number, r: number): string {
  return `${label.padEnd(34)} ${v.toFixed(1).padStart(9)} ${r.toFixed(1).padStart(9)} ${(v / r).toFixed(2).padStart(7)}x`;
}

async function main(): Promise<void> {
  const id = uniqueLabName('vpcb');
  const dir = join(tmpdir(), `${id}-bench`);
  await mkdir(dir, { recursive: true });
  // Not under the lab's `${id}-` prefix: lab up refuses a name whose namespaces exist.
  const refNs = `${id}ref`;
  try {
    const ref = await referenceTarget(refNs, dir);
    process.stderr.write(`reference: ${PODS} sequential pods, burst ${BURST}...\n`);
    const refSeries = await measure(ref, `${id}ref-p`);

    process.stderr.write('vpcnet: lab up (m5.4xlarge, pool pre-warmed)...\n');
    const lab = await labUp(id, [
      '--instance-type',
      'm5.4xlarge',
      '--agent-env',
      `MINIMUM_IP_TARGET=${Math.max(PODS, BURST) + 10}`,
      '--agent-env',
      'WARM_IP_TARGET=10',
    ]);
    const node = lab.nodes[0]!;
    const vpc: Target = {
      label: 'vpcnet',
      nodeNetns: node.netns,
      cniBinDir: node.cniBinDir,
      list: await readConfList(join(node.cniConfDir, '10-vpcnet.conflist')),
    };
    // Wait until the pool holds enough addresses so ADD never waits on EC2 (what a warm node sees).
    for (let i = 0; i < 100; i++) {
      const s = await agentState(node);
      if (s.pool.stats.available >= Math.max(PODS, BURST)) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    // One VERSION exec each: the cost of starting the plugin process alone.
    const versionMs = async (t: Target, type: string) => {
      const xs: number[] = [];
      for (let i = 0; i < 20; i++) {
        xs.push(
          await timed(() =>
            execPlugin({ ...call(t, 'ADD', 'v', ''), command: 'VERSION' }, type, '{"cniVersion":"1.0.0"}'),
          ),
        );
      }
      return pct(xs, 50);
    };
    process.stderr.write(`vpcnet: ${PODS} sequential pods, burst ${BURST}...\n`);
    const vpcSeries = await measure(vpc, `${id}-v`);
    const state = (await agentState(node)) as unknown as {
      operations: Record<string, { p50Ms: number; p95Ms: number }>;
      memory: { rssBytes: number };
    };
    const refVersion = await versionMs(ref, 'bridge');
    const vpcVersion = await versionMs(vpc, 'vpcnet');
    // The TypeScript forwarder the native one replaced (docs/design.md, The plugin: a measurement decided).
    const jsVersion = await versionMs({ ...vpc, cniBinDir: join(repoRoot, 'bin') }, 'vpcnet-js');

    const lines = [
      `pods=${PODS} burst=${BURST}  (ms; wall time per runtime call, exec included)`,
      `${''.padEnd(34)} ${'vpcnet'.padStart(9)} ${'reference'.padStart(9)} ${'ratio'.padStart(8)}`,
      row('ADD p50', pct(vpcSeries.add, 50), pct(refSeries.add, 50)),
      row('ADD p95', pct(vpcSeries.add, 95), pct(refSeries.add, 95)),
      row('DEL p50', pct(vpcSeries.del, 50), pct(refSeries.del, 50)),
      row('DEL p95', pct(vpcSeries.del, 95), pct(refSeries.del, 95)),
      row(`burst of ${BURST} ADDs, wall`, vpcSeries.burstAddWallMs, refSeries.burstAddWallMs),
      row(`burst of ${BURST} DELs, wall`, vpcSeries.burstDelWallMs, refSeries.burstDelWallMs),
      row('VERSION exec p50 (process start)', vpcVersion, refVersion),
      row('  same, TypeScript forwarder', jsVersion, refVersion),
      `agent service time: ADD p50 ${state.operations.ADD?.p50Ms} ms p95 ${state.operations.ADD?.p95Ms} ms; DEL p50 ${state.operations.DEL?.p50Ms} ms p95 ${state.operations.DEL?.p95Ms} ms`,
      `agent RSS: ${(state.memory.rssBytes / 1048576).toFixed(1)} MiB`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await labDown(id).catch(() => {});
    await runToSuccess(['ip', 'netns', 'del', refNs]).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
