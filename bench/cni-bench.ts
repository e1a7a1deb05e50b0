// Benchmark (not a test): vpcnet's performance goals, vpcnet against Debian's reference bridge +
// host-local plugins measured in the same run on this machine, both exec'd as a runtime would
// (inside a node namespace, one process per operation, each spawned and timed by a small native
// driver, native/cni-exec.c, as the runtime's own process: a spawn from this large Node process
// would cost both sides milliseconds neither plugin causes), and through containerd's CRI API.
// The ops and fill sections time the network plugins alone (vpcnet's installed conflist also
// chains portmap); the CRI section runs both whole, each with portmap.
// Prints each section's figures, then one table of the goals (figure, reference, ratio,
// goal, met). Exits 0 whatever the figures; non-zero only when a chosen section could not measure.
//
//   npm run bench -- [--only ops,service,kernel,cri,fill] [--pods 100] [--burst 50] [--in-flight 50]
//                    [--service-bursts 3] [--fill-levels 10,50,100,200] [--fill-pairs 30]
//                    [--sandboxes 20] [--name-prefix vpcb] [--help]
import { mkdir, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { runToSuccess } from '../src/infra/process.ts';
import { labLayout } from '../src/lab/layout.ts';
import {
  agentState,
  type LabNodeDesc,
  labDown,
  labUp,
  repoRoot,
  uniqueLabName,
} from '../test/lab-fixture.ts';
import { measureServiceTime, type ServiceTime } from './agent-figures.ts';
import { loggedOperations, phaseSplit } from './agent-log.ts';
import { measureOps, typescriptForwarderDir, versionExecP50 } from './cni-ops.ts';
import {
  assertContainerdPresent,
  measureCri,
  prepareVpcnetContainerdDir,
  removeContainerdDir,
} from './cri-sandbox.ts';
import {
  criFigures,
  criLines,
  fillFigures,
  fillLines,
  type OpsResult,
  opsFigures,
  opsLines,
  serviceFigures,
  serviceLines,
} from './figures.ts';
import { measureFillUp } from './fill-up.ts';
import { type Figure, formatGoalsTable } from './goals-table.ts';
import { kernelStepLines, measureKernelStep } from './kernel-step.ts';
import { type Options, parseOptions, type Section, USAGE, UsageError } from './options.ts';
import { sleep } from './stats.ts';
import { buildExecDriver, referenceTarget, type Target, vpcnetTarget } from './targets.ts';

/** An m5.4xlarge holds 8 ENIs x 30 addresses, 232 of them secondary: what pods can have. */
const POD_ADDRESSES = 232;

/** Every pod the bench has at once, plus the warm target: the pool never grows while it measures. */
function poolTarget(o: Options): number {
  const pods: Record<Section, number> = {
    ops: Math.max(o.pods, o.burst),
    service: o.inFlight,
    kernel: 0,
    cri: o.sandboxes,
    fill: Math.max(...o.fillLevels) + 1,
  };
  return Math.max(...[...o.sections].map((s) => pods[s])) + WARM_IP_TARGET;
}

const WARM_IP_TARGET = 10;

function labArgs(o: Options): string[] {
  if (poolTarget(o) > POD_ADDRESSES) {
    throw new Error(
      `an m5.4xlarge has ${POD_ADDRESSES} pod addresses; the bench's pods and warm target need ${poolTarget(o)}`,
    );
  }
  return [
    '--instance-type',
    'm5.4xlarge',
    // The pool pre-warmed, so that ADD never waits on EC2 (what a warm node sees), and no cooldown,
    // so that a freed address is free again at once: the pool then never grows (EC2 calls, ENIs
    // moving into the node's namespace) while an operation is timed, not even at 200 pods.
    '--agent-env',
    `MINIMUM_IP_TARGET=${poolTarget(o)}`,
    '--agent-env',
    `WARM_IP_TARGET=${WARM_IP_TARGET}`,
    '--agent-env',
    'IP_COOLDOWN_PERIOD=0',
  ];
}

async function waitForFullPool(node: LabNodeDesc, total: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await agentState(node)).pool.stats.total >= total) return;
    await sleep(300);
  }
  throw new Error(`the agent's pool did not reach ${total} addresses in 120 s`);
}

interface Results {
  readonly lines: string[];
  readonly figures: Figure[];
  readonly failures: string[];
}

/** What every section measures on: the lab node's vpcnet, the reference, the bench's names and files. */
interface Bench {
  readonly o: Options;
  readonly id: string;
  readonly dir: string;
  readonly node: LabNodeDesc;
  readonly vpcnet: Target;
}

interface Measured {
  readonly lines: readonly string[];
  readonly figures: readonly Figure[];
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function section(r: Results, name: Section, run: () => Promise<Measured>): Promise<void> {
  process.stderr.write(`${name}...\n`);
  try {
    const m = await run();
    r.lines.push(...m.lines);
    r.figures.push(...m.figures);
  } catch (err) {
    r.failures.push(`${name}: ${errorMessage(err)}`);
    process.stderr.write(`${name} could not measure: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
}

async function opsSection(b: Bench, reference: Target): Promise<Measured> {
  const { o, node, vpcnet } = b;
  process.stderr.write(`  ${o.pods} sequential pods and a burst of ${o.burst}, each side in turn...\n`);
  const prefixes = { vpcnet: `${b.id}-v`, reference: `${b.id}ref-p` };
  const both = await measureOps(vpcnet, reference, prefixes, o.pods, o.burst);
  const state = (await agentState(node)) as unknown as {
    operations: Record<string, { p50Ms: number; p95Ms: number }>;
    memory: { rssBytes: number };
  };
  const add = state.operations.ADD;
  const del = state.operations.DEL;
  const sequential = (msg: 'attached' | 'detached') =>
    loggedOperations(agentLogOf(b), msg, (id) => /^seq\d+$/.test(id));
  const ops: OpsResult = {
    pods: o.pods,
    burst: o.burst,
    vpcnet: both.vpcnet,
    reference: both.reference,
    versionMs: {
      reference: await versionExecP50(reference, 'bridge'),
      vpcnet: await versionExecP50(vpcnet, 'vpcnet'),
      typescript: await versionExecP50(vpcnet, 'vpcnet-js', typescriptForwarderDir(repoRoot)),
    },
    agentLine:
      `agent service time: ADD p50 ${add?.p50Ms} ms p95 ${add?.p95Ms} ms; DEL p50 ${del?.p50Ms} ms p95 ${del?.p95Ms} ms;` +
      ` agent RSS ${(state.memory.rssBytes / 1048576).toFixed(1)} MiB\n` +
      `  agent phases of the sequential pods, p50/p95 (ms): ADD ${phaseSplit(await sequential('attached'))};` +
      ` DEL ${phaseSplit(await sequential('detached'))}`,
  };
  return { lines: opsLines(ops), figures: opsFigures(ops) };
}

async function serviceSection(b: Bench): Promise<Measured> {
  const bursts: ServiceTime[] = [];
  for (let i = 0; i < b.o.serviceBursts; i++) {
    bursts.push(await measureServiceTime(b.vpcnet, b.node, `${b.id}-s${i}x`, b.o.inFlight, agentLogOf(b)));
  }
  return { lines: serviceLines(bursts), figures: serviceFigures(bursts) };
}

/** The lab node's agent log (the lab's layout, src/lab/layout.ts). */
function agentLogOf(b: Bench): string {
  const node = labLayout(b.id, 1).nodes[0];
  if (node === undefined) throw new Error(`lab ${b.id} has no node in its layout`);
  return node.agentLog;
}

async function criSection(b: Bench, reference: Target, containerdDir: string): Promise<Measured> {
  const c = await measureCri({
    labName: b.id,
    node: b.node,
    vpcnetDir: containerdDir,
    referenceNetns: reference.nodeNetns,
    workDir: b.dir,
    sandboxes: b.o.sandboxes,
  });
  return { lines: criLines(c), figures: criFigures(c) };
}

async function fillSection(b: Bench, reference: Target): Promise<Measured> {
  const f = await measureFillUp(b.vpcnet, reference, b.node, `${b.id}-f`, b.o.fillLevels, b.o.fillPairs);
  // Which of the agent's phases grows as the node fills, if any (the pairs' IDs name their level).
  const phasesAt = async (level: number, msg: 'attached' | 'detached') =>
    phaseSplit(
      await loggedOperations(agentLogOf(b), msg, (id) =>
        new RegExp(`^probe${level}(up|down)x\\d+$`).test(id),
      ),
    );
  const phaseLines: string[] = [];
  for (const l of f.levels) {
    phaseLines.push(
      `  agent phases at ${l.attachments} attachments, p50/p95 (ms): ADD ${await phasesAt(l.attachments, 'attached')};` +
        ` DEL ${await phasesAt(l.attachments, 'detached')}`,
    );
  }
  return { lines: [...fillLines(f), ...phaseLines], figures: fillFigures(f) };
}

async function runSections(o: Options, id: string, dir: string, refNetns: string, r: Results): Promise<void> {
  const wants = (s: Section) => o.sections.has(s);
  const driver = await buildExecDriver(dir);
  const reference =
    wants('ops') || wants('cri') || wants('fill') ? await referenceTarget(refNetns, dir, driver) : undefined;
  let containerdDir: string | undefined;
  if (wants('cri')) {
    try {
      await assertContainerdPresent();
      // A shared mount before the agent starts (cri-sandbox.ts).
      containerdDir = await prepareVpcnetContainerdDir(id);
    } catch (err) {
      r.failures.push(`cri: ${errorMessage(err)}`);
    }
  }
  try {
    process.stderr.write('vpcnet: lab up (m5.4xlarge, pool pre-warmed)...\n');
    const lab = await labUp(id, labArgs(o));
    const node = lab.nodes[0]!;
    const b: Bench = { o, id, dir, node, vpcnet: await vpcnetTarget(node, dir, driver) };
    await waitForFullPool(node, poolTarget(o));
    if (wants('ops') && reference !== undefined) await section(r, 'ops', () => opsSection(b, reference));
    if (wants('service')) await section(r, 'service', () => serviceSection(b));
    if (wants('kernel')) {
      await section(r, 'kernel', async () => ({
        lines: kernelStepLines(await measureKernelStep(repoRoot, `${id}k`, o.inFlight)),
        figures: [],
      }));
    }
    if (containerdDir !== undefined && reference !== undefined) {
      const handedOver = containerdDir;
      containerdDir = undefined; // measureCri removes it
      await section(r, 'cri', () => criSection(b, reference, handedOver));
    }
    if (wants('fill') && reference !== undefined) await section(r, 'fill', () => fillSection(b, reference));
  } finally {
    if (containerdDir !== undefined) await removeContainerdDir(containerdDir);
  }
}

/** The 1- and 5-minute load averages. */
async function machineLoad(): Promise<string> {
  const [one, five] = (await readFile('/proc/loadavg', 'utf8')).split(' ');
  return `${one}/${five}`;
}

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2));
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const id = uniqueLabName(o.namePrefix);
  const dir = join(tmpdir(), `${id}-bench`);
  await mkdir(dir, { recursive: true });
  // Not under the lab's `${id}-` prefix: lab up refuses a name whose namespaces exist.
  const refNetns = `${id}ref`;
  const r: Results = { lines: [], figures: [], failures: [] };
  const loadStart = await machineLoad();
  try {
    await runSections(o, id, dir, refNetns, r);
  } catch (err) {
    r.failures.push(err instanceof Error ? (err.stack ?? err.message) : String(err));
  } finally {
    await labDown(id).catch(() => undefined);
    await runToSuccess(['ip', 'netns', 'del', refNetns]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  }
  // The machine is shared: how busy it was says how far to trust the figures.
  const loadEnd = await machineLoad();
  const machine = `machine: ${availableParallelism()} CPUs; load average ${loadStart} at the start, ${loadEnd} at the end`;
  const out = [machine, ...r.lines, '', formatGoalsTable(r.figures)];
  process.stdout.write(`${out.join('\n')}\n`);
  for (const f of r.failures) process.stderr.write(`could not measure: ${f}\n`);
  return r.failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`bench: ${err.message}\n(--help for usage)\n`);
      process.exit(2);
    }
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
