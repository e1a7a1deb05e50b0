// The agents' metrics as Prometheus sees them: a real Prometheus server (Debian's `prometheus`)
// runs inside the lab's VPC test host namespace, scrapes every node's agent on <node ip>:61678
// every second, and the test asks its HTTP API for a few series. Then the introspection endpoint,
// read from inside a node's namespace as an operator's curl would, against the agent's socket.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { UPSTREAM_SERIES } from '../../src/agent/observability/testing/upstream-series.ts';
import {
  addPod,
  agentState,
  type LabDesc,
  labDown,
  labUp,
  newPod,
  registerPod,
  sh,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

const PROMETHEUS = '/usr/bin/prometheus';
const METRICS_PORT = 61678;
const PROMETHEUS_PORT = 9090;
/** Pods started on each node: different counts, so that a series of the wrong node cannot pass. */
const PODS_PER_NODE = [2, 1];

const missing = !existsSync(PROMETHEUS);
// Under CI the Debian package is installed (.ci/run); a missing binary fails there.
const skip =
  missing && process.env.CI !== 'true' ? `${PROMETHEUS} missing: apt-get install prometheus` : false;

interface PromSample {
  readonly metric: Record<string, string>;
  readonly value: readonly [number, string];
}

/** A Prometheus server started by the test, stopped by its PID. */
interface RunningPrometheus {
  readonly child: ChildProcess;
  readonly dir: string;
  readonly netns: string;
  readonly url: string;
  readonly output: () => string;
}

function scrapeConfig(targets: readonly { node: string; ip: string }[]): string {
  // JSON is YAML: no YAML writer needed.
  return JSON.stringify({
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    scrape_configs: [
      {
        job_name: 'vpcnet',
        static_configs: targets.map((t) => ({
          targets: [`${t.ip}:${METRICS_PORT}`],
          labels: { node: t.node },
        })),
      },
    ],
  });
}

async function startPrometheus(netns: string, ip: string, config: string): Promise<RunningPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'mt-prometheus-'));
  await writeFile(join(dir, 'prometheus.yml'), config);
  const listen = `${ip}:${PROMETHEUS_PORT}`;
  // `ip netns exec` execs prometheus in place: the child's PID is Prometheus' own.
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      netns,
      PROMETHEUS,
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=${listen}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.on('error', (err) => {
    output += `cannot start: ${err.message}\n`;
  });
  child.stdout?.on('data', (c: Buffer) => {
    output += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    output += c.toString();
  });
  return { child, dir, netns, url: `http://${listen}`, output: () => output.slice(-4000) };
}

async function stopPrometheus(p: RunningPrometheus): Promise<void> {
  const { child } = p;
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(child.pid, 'SIGTERM');
    const timer = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined)
        process.kill(child.pid, 'SIGKILL');
    }, 10_000);
    await exited;
    clearTimeout(timer);
  }
  await rm(p.dir, { recursive: true, force: true });
}

// A GET from inside a namespace, as curl would do it there (Node is there for sure; curl may not be).
const GET_SCRIPT = `
const res = await fetch(process.argv[1], { signal: AbortSignal.timeout(5000) });
process.stdout.write(await res.text());
if (!res.ok) process.exit(1);
`;

async function getInNetns(netns: string, url: string): Promise<string> {
  return sh(['ip', 'netns', 'exec', netns, process.execPath, '--input-type=module', '-e', GET_SCRIPT, url]);
}

/** An instant query through Prometheus' HTTP API, asked from inside its namespace. */
async function query(p: RunningPrometheus, promql: string): Promise<PromSample[]> {
  const url = `${p.url}/api/v1/query?query=${encodeURIComponent(promql)}`;
  const body = JSON.parse(await getInNetns(p.netns, url)) as {
    status: string;
    data?: { resultType: string; result: PromSample[] };
    error?: string;
  };
  if (body.status !== 'success' || body.data === undefined)
    throw new Error(`${promql}: ${body.error ?? 'failed'}`);
  return body.data.result;
}

/** Each metric family's type, as Prometheus read it from its targets' `# TYPE` lines. */
async function metadataOf(p: RunningPrometheus): Promise<Map<string, string>> {
  const body = JSON.parse(await getInNetns(p.netns, `${p.url}/api/v1/metadata`)) as {
    status: string;
    data?: Record<string, { type: string }[]>;
  };
  if (body.status !== 'success' || body.data === undefined) throw new Error('metadata: failed');
  return new Map(Object.entries(body.data).map(([name, [first]]) => [name, first?.type ?? '']));
}

/** The query's value per node label, once it satisfies `done` (Prometheus scrapes every second). */
async function valuesByNode(
  p: RunningPrometheus,
  promql: string,
  done: (byNode: Map<string, number>) => boolean,
): Promise<Map<string, number>> {
  let last = new Map<string, number>();
  try {
    return await waitFor(
      promql,
      async () => {
        last = new Map((await query(p, promql)).map((s) => [s.metric.node ?? '', Number(s.value[1])]));
        return done(last) ? last : undefined;
      },
      30_000,
    );
  } catch (err) {
    throw new Error(
      `${(err as Error).message}; last answer ${JSON.stringify([...last])}; prometheus: ${p.output()}`,
    );
  }
}

describe('Prometheus scraping the agents of a two-node lab', { skip }, () => {
  const name = uniqueLabName('mt');
  let lab: LabDesc;
  let prometheus: RunningPrometheus | undefined;
  const nodeIps = new Map<string, string>();

  before(async () => {
    await labDown(name);
    lab = await labUp(name, ['--nodes', '2']);
    for (const [i, node] of lab.nodes.entries()) {
      for (let n = 0; n < (PODS_PER_NODE[i] ?? 0); n++) {
        const pod = await newPod(name, `p${i}${n}`, { uid: `uid-${i}-${n}` });
        await registerPod(name, node.name, pod.namespace, pod.name, pod.uid!);
        await addPod(node, pod);
      }
      const primary = (await agentState(node)).pool.enis.find((e) => e.deviceNumber === 0) as
        | { primaryIp?: string }
        | undefined;
      assert.ok(primary?.primaryIp, `${node.name}: the primary ENI's address`);
      nodeIps.set(node.name, primary.primaryIp);
    }
    const host = lab.vpcHosts[0];
    assert.ok(host, 'the lab has a VPC test host');
    const targets = lab.nodes.map((n) => ({ node: n.name, ip: nodeIps.get(n.name)! }));
    prometheus = await startPrometheus(host.netns, host.ip, scrapeConfig(targets));
  });

  after(async () => {
    if (prometheus) await stopPrometheus(prometheus);
    await labDown(name);
  });

  test('Prometheus scrapes both agents, and their series count the pods and ENIs of each node', async () => {
    const p = prometheus!;
    const nodes = lab.nodes.map((n) => n.name);
    const up = await valuesByNode(p, 'up{job="vpcnet"}', (m) => nodes.every((n) => m.get(n) === 1));
    assert.deepEqual([...up.keys()].sort(), [...nodes].sort(), 'one target per node, both up');

    const expected = new Map(lab.nodes.map((n, i) => [n.name, PODS_PER_NODE[i] ?? 0]));
    const same = (m: Map<string, number>) => nodes.every((n) => m.get(n) === expected.get(n));
    const assigned = await valuesByNode(p, 'awscni_assigned_ip_addresses', same);
    assert.deepEqual(assigned, expected, 'assigned addresses = pods on each node');
    const adds = await valuesByNode(
      p,
      'vpcnet_cni_operation_duration_seconds_count{command="ADD",outcome="ok"}',
      same,
    );
    assert.deepEqual(adds, expected, 'the ADD histogram counted every pod’s ADD');

    for (const node of lab.nodes) {
      const enis = (await agentState(node)).pool.enis.length;
      const allocated = await valuesByNode(
        p,
        `awscni_eni_allocated{node="${node.name}"}`,
        (m) => m.size === 1,
      );
      assert.equal(allocated.get(node.name), enis, `${node.name}: ENIs allocated as the agent's state says`);
      assert.ok(enis >= 1);
    }
    const total = await valuesByNode(p, 'awscni_total_ip_addresses', (m) => m.size === nodes.length);
    for (const n of nodes) assert.ok((total.get(n) ?? 0) >= (expected.get(n) ?? 0), `${n}: total ≥ assigned`);
  });

  test('Prometheus knows every upstream awscni_* series of each agent with upstream’s type, and their start-up durations', async () => {
    const p = prometheus!;
    const nodes = lab.nodes.map((n) => n.name);
    // Once both agents are scraped, the metadata API lists each family the scrapes declared.
    await valuesByNode(p, 'awscni_build_info', (m) => nodes.every((n) => m.get(n) === 1));
    const metadata = await metadataOf(p);
    const wrong = UPSTREAM_SERIES.filter((u) => metadata.get(u.name) !== u.type).map(
      (u) => `${u.name}: ${metadata.get(u.name) ?? 'missing'}, upstream ${u.type}`,
    );
    assert.deepEqual(wrong, []);
    const init = await valuesByNode(
      p,
      'awscni_ipamd_node_initialization_duration_seconds_sum{success="true"}',
      (m) => m.size === nodes.length,
    );
    const startup = await valuesByNode(
      p,
      'awscni_ipamd_startup_duration_seconds_sum{success="true"}',
      (m) => m.size === nodes.length,
    );
    for (const n of nodes) {
      const i = init.get(n) ?? 0;
      const s = startup.get(n) ?? 0;
      assert.ok(i > 0 && s > i, `${n}: node initialisation ${i} s within the start ${s} s`);
      assert.ok(s < 120, `${n}: the agent started in ${s} s`);
    }
  });

  test('the introspection endpoint, read inside the node’s namespace, shows what the socket shows', async () => {
    for (const node of lab.nodes) {
      const get = async (path: string) =>
        JSON.parse(await getInNetns(node.netns, `http://127.0.0.1:61679${path}`)) as Record<string, unknown>;
      const overHttp = (await get('/v1/state')) as Record<string, unknown> & {
        pool: Record<string, unknown>;
      };
      const overSocket = (await agentState(node)) as unknown as Record<string, unknown> & {
        pool: Record<string, unknown>;
      };
      for (const field of ['instanceId', 'attachments', 'bindings', 'cloudErrors'])
        assert.deepEqual(overHttp[field], overSocket[field], `${node.name}: ${field}`);
      assert.deepEqual(overHttp.pool.enis, overSocket.pool.enis, `${node.name}: ENIs`);
      assert.deepEqual((await get('/v1/pods')).attachments, overSocket.attachments);
      assert.deepEqual((await get('/v1/enis')).enis, overSocket.pool.enis);
      assert.ok(Array.isArray((await get('/v1/cloud-errors')).cloudErrors));
    }
  });
});
