// What a pod controls may not stall the agent: a pod with NET_ADMIN in its own namespace can add
// 300,000 routes there, ~20 MB when read whole, which the agent would spend seconds of its event
// loop on. Here, on the real kernel: the helper reads of a pod's namespace only what vpcnet judges
// (filtered by the kernel where it can, by the helper while reading where it cannot), refuses a
// namespace that holds more of it than the bound with an answer naming it, and neither the agent
// nor the helper pays for the flood. Namespaces are named nlb-* and always removed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { processMemory } from '../../bench/agent-process.ts';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { NetlinkKernel } from '../../src/dataplane/netlink/netlink-kernel.ts';
import { readRequest } from '../../src/dataplane/netlink/wire.ts';
import { podScopeOf } from '../../src/dataplane/pod-scope.ts';
import { runToSuccess } from '../../src/infra/process.ts';
import { planRegularPod } from '../../src/plan/pod-plan.ts';
import type { Resource } from '../../src/plan/resource.ts';
import { netnsPath, netnsTracker } from '../netns-fixture.ts';
import { NETLINK_HELPER } from './scenario-harness.ts';

const FLOOD = 300_000;

/** How many objects of each kind the kernel sent the helper for a read, kept or not. */
interface Received {
  readonly links: number;
  readonly addresses: number;
  readonly routes: number;
  readonly rules: number;
  readonly neighbours: number;
}
/** The helper's bound on objects of a kind it reads in a pod's namespace. */
const BOUND = 10_000;
/** The agent's time for one inspection of a flooded pod (its event loop, not the helper's thread). */
const AGENT_MS = 50;

function podPlan(name: string, ip: string): Resource[] {
  return planRegularPod({
    key: { network: 'vpcnet', containerId: name, ifName: 'eth0' },
    vethPrefix: 'vpc',
    ip,
    eniId: 'eni-1',
    routeTable: 2,
    mtu: 9001,
    snat: false,
  });
}

/** `count` host routes through the pod's eth0 (in `table`, else main), added with one `ip -batch`. */
async function flood(ns: string, count: number, table?: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'nlb-'));
  try {
    const file = join(dir, 'routes');
    const suffix = table === undefined ? '' : ` table ${table}`;
    const lines: string[] = [];
    for (let i = 0; i < count; i++)
      lines.push(`route add 100.${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 dev eth0${suffix}`);
    await writeFile(file, `${lines.join('\n')}\n`);
    await runToSuccess(['ip', '-n', ns, '-batch', file], { timeoutMs: 120_000 });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A link of the pod's own beside eth0 (x0, its peer x1 in the pod too) with an address and 20 neighbours. */
async function otherLink(ns: string): Promise<void> {
  const lines = [
    'link add x0 type veth peer name x1',
    'link set x0 up',
    'addr add 192.0.2.1/24 dev x0',
    ...Array.from(
      { length: 20 },
      (_, i) =>
        `neigh add 192.0.2.${i + 2} lladdr 02:00:00:00:00:${(i + 16).toString(16)} dev x0 nud permanent`,
    ),
  ];
  await runToSuccess(['ip', '-n', ns, '-batch', '-'], { stdin: `${lines.join('\n')}\n` });
}

/** The agent's own CPU time (this process: its event loop and threads) spent in `fn`, in ms. */
async function agentMs<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = process.cpuUsage();
  const value = await fn();
  const used = process.cpuUsage(start);
  return { value, ms: (used.user + used.system) / 1000 };
}

/** One answer of a helper started with `args`, as the raw JSON it wrote, and the helper's peak RSS. */
async function rawRead(
  args: readonly string[],
  line: string,
): Promise<{ answer: Record<string, unknown>; peakMiB: number }> {
  const child = spawn(NETLINK_HELPER, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  try {
    const lines = createInterface({ input: child.stdout });
    child.stdin.write(line);
    const exited = once(child, 'exit').then(([code]) => {
      throw new Error(`${NETLINK_HELPER} ${args.join(' ')} exited (${code}) without answering`);
    });
    const [text] = (await Promise.race([once(lines, 'line'), exited])) as [string];
    const { peakMiB } = await processMemory(child.pid ?? 0);
    return { answer: JSON.parse(text) as Record<string, unknown>, peakMiB };
  } finally {
    child.stdin.end();
    if (child.exitCode === null) await once(child, 'exit');
  }
}

describe('reads of pod namespaces are bounded by what vpcnet judges there', () => {
  const tracker = netnsTracker();
  let node = '';
  /** A pod as vpcnet made it. */
  let normal = '';
  /** A pod that added FLOOD routes through its own eth0 in its main table, which vpcnet judges. */
  let flooded = '';
  /** A pod that added FLOOD routes in a table of its own, which vpcnet never reads. */
  let aside = '';
  const plans = { normal: podPlan('c-normal', '10.0.0.5'), flooded: podPlan('c-flood', '10.0.0.6') };
  const asidePlan = podPlan('c-aside', '10.0.0.7');
  let kernel: NetlinkKernel;
  let dp: Dataplane;

  before(async () => {
    node = netnsPath(await tracker.create('nlb-node-'));
    normal = netnsPath(await tracker.create('nlb-pod-'));
    flooded = netnsPath(await tracker.create('nlb-pod-'));
    aside = netnsPath(await tracker.create('nlb-pod-'));
    kernel = new NetlinkKernel({ program: NETLINK_HELPER, hostNetns: node, snat: false });
    dp = new Dataplane(kernel);
    await dp.create(normal, plans.normal);
    await dp.create(flooded, plans.flooded);
    await dp.create(aside, asidePlan);
    await flood(flooded.split('/').pop() ?? '', FLOOD);
    await flood(aside.split('/').pop() ?? '', FLOOD, 100);
    await otherLink(aside.split('/').pop() ?? '');
  });
  after(async () => {
    await kernel?.close();
    await tracker.removeAll();
  });

  test('a pod flooded with 300,000 routes through its interface is refused at the bound, naming its namespace, at little cost to the agent and the helper', {
    timeout: 120_000,
  }, async (t) => {
    await dp.inspect(normal, plans.normal);
    const peakBefore = process.resourceUsage().maxRSS;
    const { value: seen, ms } = await agentMs(() => dp.inspect(flooded, plans.flooded));
    const grewKib = process.resourceUsage().maxRSS - peakBefore;
    const helperMiB = (await processMemory(kernel.helperPid ?? 0)).peakMiB;
    t.diagnostic(
      `agent CPU ${ms.toFixed(0)} ms; agent peak RSS +${grewKib} KiB; helper VmHWM ${helperMiB.toFixed(1)} MiB`,
    );
    assert.ok(ms < AGENT_MS, `the agent spent ${ms.toFixed(0)} ms on the flooded pod's inspection`);
    assert.ok(grewKib < 16 * 1024, `the agent's peak RSS grew by ${grewKib} KiB`);
    assert.ok(helperMiB < 16, `the helper's peak RSS is ${helperMiB.toFixed(1)} MiB`);
    assert.match(
      seen.podUnreachable ?? '',
      new RegExp(`more than ${BOUND} routes \\(table main, dev eth0\\)`),
      JSON.stringify(seen).slice(0, 300),
    );
    // The node side is still judged.
    assert.deepEqual(seen.findings, []);
    // Read whole (not scoped) it is refused too, with its path in the error.
    await assert.rejects(kernel.readPod(flooded), (err: Error) => {
      assert.ok(err.message.includes(flooded), err.message);
      assert.match(err.message, new RegExp(`more than ${BOUND} routes`));
      return true;
    });
  });

  test('a normal pod beside the flooded one is inspected as fast as ever while the flooded one is read', {
    timeout: 120_000,
  }, async (t) => {
    const latencies: number[] = [];
    const start = performance.now();
    const floodedReads = Promise.all(Array.from({ length: 4 }, () => dp.inspect(flooded, plans.flooded)));
    for (let i = 0; i < 20; i++) {
      const began = performance.now();
      const seen = await dp.inspect(normal, plans.normal);
      latencies.push(performance.now() - began);
      assert.deepEqual(seen, { findings: [] });
    }
    const refused = (await floodedReads).filter((seen) => seen.podUnreachable !== undefined).length;
    const all = performance.now() - start;
    latencies.sort((a, b) => a - b);
    const [p50, worst] = [latencies[10] ?? 0, latencies[19] ?? 0];
    t.diagnostic(
      `normal pod: p50 ${p50.toFixed(1)} ms, worst ${worst.toFixed(1)} ms; 4 flooded reads done after ${all.toFixed(0)} ms`,
    );
    assert.ok(worst < 250, `a normal pod's inspection took up to ${worst.toFixed(0)} ms`);
    assert.ok(all < 2000, `4 flooded reads and 20 normal ones took ${all.toFixed(0)} ms`);
    assert.equal(refused, 4);
  });

  test('what vpcnet does not judge is left out by the kernel (another table, another link): the pod is judged whole and cheaply', {
    timeout: 120_000,
  }, async (t) => {
    const { value: seen, ms } = await agentMs(() => dp.inspect(aside, asidePlan));
    t.diagnostic(`agent CPU ${ms.toFixed(0)} ms`);
    assert.deepEqual(seen, { findings: [] });
    assert.ok(ms < AGENT_MS, `the agent spent ${ms.toFixed(0)} ms on the pod's inspection`);
    // This kernel honours each filter: the helper is sent neither table 100's routes nor lo's and
    // x0's addresses, nor x0's 20 neighbours.
    const { answer } = await rawRead(
      ['--node-netns', node],
      readRequest(1, { side: 'pod', path: aside }, podScopeOf(asidePlan)),
    );
    const received = answer.received as Received | undefined;
    t.diagnostic(`received with the kernel's filters: ${JSON.stringify(received)}`);
    assert.ok(received !== undefined, JSON.stringify(answer).slice(0, 300));
    assert.ok(
      received.routes < 50 && received.addresses <= 2 && received.neighbours < 20,
      JSON.stringify(received),
    );
    assert.deepEqual(
      (answer.links as { ifname: string }[]).map((l) => l.ifname),
      ['eth0'],
    );
  });

  test('on a kernel that cannot filter (before strict checking), the helper drops what it does not judge while reading, keeping nothing of it', {
    timeout: 120_000,
  }, async (t) => {
    const line = readRequest(1, { side: 'pod', path: aside }, podScopeOf(asidePlan));
    const strict = await rawRead(['--node-netns', node], line);
    const fallback = await rawRead(['--node-netns', node, '--no-strict-check'], line);
    const received = fallback.answer.received as Received | undefined;
    t.diagnostic(
      `received without them: ${JSON.stringify(received)}; helper VmHWM ${fallback.peakMiB.toFixed(1)} MiB`,
    );
    assert.ok(
      received !== undefined && received.routes >= FLOOD && received.addresses > 2,
      JSON.stringify(received),
    );
    const view = ({ received: _, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(view(fallback.answer), view(strict.answer));
    assert.ok(fallback.peakMiB < 16, `the helper's peak RSS is ${fallback.peakMiB.toFixed(1)} MiB`);
  });

  test('refused reads leave nothing behind in the helper, however many of its workers refused one', {
    timeout: 180_000,
  }, async (t) => {
    // Every worker (32) refuses reads at once, then again and again: the helper's memory stays put.
    const round = () => Promise.all(Array.from({ length: 64 }, () => dp.inspect(flooded, plans.flooded)));
    await round();
    const pid = kernel.helperPid ?? 0;
    const rss = (await processMemory(pid)).rssMiB;
    for (let i = 0; i < 5; i++) await round();
    const grew = (await processMemory(pid)).rssMiB - rss;
    t.diagnostic(
      `helper VmRSS ${rss.toFixed(1)} MiB after the first 64 refused reads, +${grew.toFixed(2)} MiB after 320 more`,
    );
    assert.ok(grew < 2, `the helper's RSS grew by ${grew.toFixed(2)} MiB over 320 refused reads`);
    assert.equal(kernel.helperPid, pid);
  });
});
