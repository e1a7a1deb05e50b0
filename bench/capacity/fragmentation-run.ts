// One run of the fragmentation comparison (bench/capacity.ts): N nodes in prefix mode, each with
// its real pool manager (real IPAM, the AWS driver over HTTP) against one in-process emulator
// whose /20 starts pre-fragmented by other tenants (seeded), and a stream of pod starts and stops
// played on a simulated clock. Mode `census`: every node runs the real census loop (elected on a
// Lease of the emulator's API server), so prefixes are asked only of subnets with a free /28 and
// /32s are named inside broken /28s. Mode `upstream`: no census, as aws-node (and its peers) do:
// prefixes asked blindly, /32 fallback by count, which EC2 fills at random.

import { SubnetCensusLoop } from '../../src/agent/loops/subnet-census.ts';
import type { InstanceMetadata } from '../../src/cloud/cloud.ts';
import { createAwsCloud } from '../../src/cloud/create-aws-cloud.ts';
import type { LaunchedInstance, PreFragmentation, RunningEmulator } from '../../src/emulator/api.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { seededRandom } from '../../src/emulator/vpc/ids.ts';
import { silentLogger } from '../../src/infra/log.ts';
import { AddressPool } from '../../src/ipam/pool/pool.ts';
import { PoolManager } from '../../src/ipam/pool/pool-manager.ts';
import { KubeClient } from '../../src/pods/kube-client.ts';
import { KubeLeases } from '../../src/pods/lease.ts';
import { LeaseElection } from '../../src/pods/lease-election.ts';

export type Mode = 'census' | 'upstream';

export interface RunOptions {
  readonly mode: Mode;
  readonly nodes: number;
  /** Pod starts in all; every pod is stopped again before the run ends. */
  readonly pods: number;
  readonly seed: number;
  /** Pods running at once the stream hovers around (default: 32 per node). */
  readonly population?: number;
  readonly subnetCidr?: string;
  readonly preFragmentation?: Omit<PreFragmentation, 'seed'>;
  readonly instanceType?: string;
  /** Told of progress now and then (the CLI prints it). */
  readonly progress?: (line: string) => void;
}

export interface RunFigures {
  readonly mode: Mode;
  /** Whole /28s left in the subnet at the end (the emulator's ground truth). */
  readonly freePrefixesAtEnd: number;
  /** The same, at the start, after the tenants and the nodes' primary ENIs. */
  readonly freePrefixesAtStart: number;
  /** Whole /28s left when the stream's population was at its peak-phase end (before draining). */
  readonly freePrefixesUnderLoad: number;
  /** EC2 answers InsufficientCidrBlocks during the run. */
  readonly insufficientCidrBlocks: number;
  readonly ec2Calls: Readonly<Record<string, number>>;
  /** DescribeNetworkInterfaces calls that named the subnet by filter (the census's reads). */
  readonly censusDescribes: number;
  readonly secondaryIps: { readonly named: number; readonly counted: number; readonly collisions: number };
  readonly prefixAsksSpared: number;
  /** Pod starts that found no address at once, and the longest any waited (simulated seconds). */
  readonly startsThatWaited: number;
  /** Pool passes that failed (EC2 refused what the pool asked); the pool retries on the next. */
  readonly failedPasses: number;
  readonly longestWaitS: number;
  readonly simulatedS: number;
  readonly wallS: number;
}

const SUBNET = 'subnet-0frag00000000000';
const TICK_MS = 1000;
const PASS_EVERY_MS = 5000;
const EVENTS_PER_TICK = 10;

interface Node {
  readonly instance: LaunchedInstance;
  readonly manager: PoolManager;
  readonly census: SubnetCensusLoop | undefined;
  nextCensusAt: number;
  readonly running: { owner: string; ip: string }[];
  readonly pending: { owner: string; since: number }[];
}

export async function runFragmentation(o: RunOptions): Promise<RunFigures> {
  const wallStart = performance.now();
  const cidr = o.subnetCidr ?? '10.2.0.0/20';
  const clock = { ms: 1_700_000_000_000 };
  let insufficient = 0;
  let censusDescribes = 0;
  const emulator: RunningEmulator = await startEmulator({
    vpc: {
      vpcId: 'vpc-0frag',
      cidr: '10.2.0.0/16',
      region: 'us-west-2',
      subnets: [
        {
          subnetId: SUBNET,
          cidr,
          availabilityZone: 'us-west-2a',
          preFragmentation: {
            seed: o.seed,
            ...(o.preFragmentation ?? { tenantEnis: 120, addressesPerEni: 2 }),
          },
        },
      ],
    },
    listen: [{ host: '127.0.0.1', port: 0 }],
    random: seededRandom(o.seed),
    log: (line) => {
      if (line.msg !== 'ec2') return;
      if (line.code === 'InsufficientCidrBlocks') insufficient++;
      if (line.action === 'DescribeNetworkInterfaces' && line.subnetId === SUBNET) censusDescribes++;
    },
  });
  const url = emulator.urls[0]!;
  const cloud = await createAwsCloud({
    region: 'us-west-2',
    ec2Endpoint: url,
    imds: { endpoint: url },
    credentials: { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' },
  });
  const kube = new KubeClient({ baseUrl: url });
  const admin = async (path: string) =>
    (await fetch(`${url}${path}`)).json() as Promise<Record<string, unknown>>;
  const freePrefixes = async () =>
    ((await admin(`/admin/subnets/${SUBNET}/capacity`)) as { freePrefixes: string[] }).freePrefixes.length;
  try {
    const nodes: Node[] = [];
    const leases = new KubeLeases(kube, { namespace: 'kube-system', name: 'vpcnet-subnet-census' });
    for (let i = 0; i < o.nodes; i++) {
      const instance = await emulator.launchInstance({
        instanceType: o.instanceType ?? 'm5.large',
        subnetId: SUBNET,
        securityGroupIds: ['sg-0bench'],
        nodeName: `node-${i}`,
      });
      const metadata = metadataOf(instance, cidr);
      const census =
        o.mode === 'census'
          ? new SubnetCensusLoop({
              election: new LeaseElection({
                leases,
                identity: `node-${i}`,
                leaseDurationMs: 90_000,
                now: () => clock.ms,
                monotonic: () => clock.ms,
              }),
              cloud,
              log: silentLogger,
              now: () => clock.ms,
              places: true,
              random: seededRandom(o.seed * 1000 + i),
            })
          : undefined;
      const manager = new PoolManager({
        cloud,
        pool: new AddressPool({ cooldownMs: 30_000 }),
        clock: { now: () => clock.ms },
        log: silentLogger,
        metadata,
        limits: await cloud.instanceTypeLimits(metadata.instanceType),
        targets: { warmEniTarget: 1, cooldownSeconds: 30 },
        prefixMode: { enabled: true, warmPrefixTarget: 1 },
        minEniLifetimeMs: 60_000,
        leakedEniCleanup: { enabled: false, graceMs: 300_000, intervalMs: 3_600_000 },
        ...(census === undefined ? {} : { census }),
      });
      await manager.init();
      nodes.push({ instance, manager, census, nextCensusAt: clock.ms, running: [], pending: [] });
    }
    // The census before the first pod: the elected node reads the subnet, the others the Lease.
    for (const n of nodes) if (n.census !== undefined) n.nextCensusAt = clock.ms + (await n.census.round());
    const freePrefixesAtStart = await freePrefixes();
    const rng = seededRandom(o.seed * 7919 + 1);
    let passErrors = 0;
    const population = o.population ?? 32 * o.nodes;
    let started = 0;
    let stopped = 0;
    let waited = 0;
    let longestWaitMs = 0;
    let freePrefixesUnderLoad = -1;
    let nextPassAt = clock.ms;
    const allocate = (n: Node) => {
      while (n.pending.length > 0) {
        const head = n.pending[0]!;
        const got = n.manager.allocate(head.owner);
        if (got === undefined) return;
        n.pending.shift();
        longestWaitMs = Math.max(longestWaitMs, clock.ms - head.since);
        n.running.push({ owner: head.owner, ip: got.ip });
      }
    };
    const live = () => nodes.reduce((s, n) => s + n.running.length + n.pending.length, 0);
    for (let tick = 0; stopped < o.pods || live() > 0; tick++) {
      clock.ms += TICK_MS;
      for (let e = 0; e < EVENTS_PER_TICK; e++) {
        const startPhase = started < o.pods;
        const wantStart = startPhase && (live() < population ? rng() < 0.6 : rng() < 0.4);
        if (wantStart) {
          const n = nodes[Math.floor(rng() * nodes.length)]!;
          const owner = `bench/pod-${started}/eth0`;
          started++;
          n.pending.push({ owner, since: clock.ms });
          const before = n.pending.length;
          allocate(n);
          if (n.pending.length === before) waited++;
        } else {
          const withPods = nodes.filter((n) => n.running.length > 0);
          if (withPods.length === 0) continue;
          const n = withPods[Math.floor(rng() * withPods.length)]!;
          const pod = n.running.splice(Math.floor(rng() * n.running.length), 1)[0]!;
          n.manager.release(pod.ip);
          stopped++;
        }
      }
      if (started >= o.pods && freePrefixesUnderLoad < 0) freePrefixesUnderLoad = await freePrefixes();
      // The pool's loop: a pass every 5 s, and at once for a node whose pods wait (allocate nudges it).
      const passTime = clock.ms >= nextPassAt;
      if (passTime) nextPassAt = clock.ms + PASS_EVERY_MS;
      for (const n of nodes) {
        if (!passTime && n.pending.length === 0) continue;
        for (let i = 0; i < 4; i++) {
          const done = await n.manager.runPass().catch(() => {
            passErrors++;
            return { kind: 'none' as const };
          });
          allocate(n);
          if (done.kind === 'none') break;
        }
      }
      for (const n of nodes) {
        if (n.census === undefined || clock.ms < n.nextCensusAt) continue;
        n.nextCensusAt = clock.ms + (await n.census.round());
      }
      if (tick % 300 === 0)
        o.progress?.(`${o.mode}: t=${tick}s started ${started} stopped ${stopped} running ${live()}`);
    }
    // Ten quiet minutes: cooldowns end, the pools shrink to their targets.
    for (let t = 0; t < 600_000; t += PASS_EVERY_MS) {
      clock.ms += PASS_EVERY_MS;
      for (const n of nodes)
        for (
          let i = 0;
          i < 4 && (await n.manager.runPass().catch(() => ({ kind: 'none' }))).kind !== 'none';
          i++
        );
    }
    const calls = ((await admin('/admin/state')) as { ec2Calls: Record<string, { calls: number }> }).ec2Calls;
    const singles = { named: 0, counted: 0, collisions: 0 };
    let spared = 0;
    for (const n of nodes) {
      const h = n.manager.health();
      singles.named += h.singles.named;
      singles.counted += h.singles.counted;
      singles.collisions += h.singles.collisions;
      spared += h.prefixes?.censusSkips ?? 0;
    }
    return {
      mode: o.mode,
      freePrefixesAtEnd: await freePrefixes(),
      freePrefixesAtStart,
      freePrefixesUnderLoad,
      insufficientCidrBlocks: insufficient,
      ec2Calls: Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, v.calls])),
      censusDescribes,
      secondaryIps: singles,
      prefixAsksSpared: spared,
      startsThatWaited: waited,
      failedPasses: passErrors,
      longestWaitS: longestWaitMs / 1000,
      simulatedS: (clock.ms - 1_700_000_000_000) / 1000,
      wallS: (performance.now() - wallStart) / 1000,
    };
  } finally {
    kube.close();
    cloud.close();
    await emulator.close();
  }
}

function metadataOf(i: LaunchedInstance, subnetCidr: string): InstanceMetadata {
  return {
    instanceId: i.instanceId,
    instanceType: i.instanceType,
    region: 'us-west-2',
    availabilityZone: 'us-west-2a',
    primaryMac: i.primaryEni.mac,
    primaryIp: i.primaryEni.primaryIp,
    subnetId: i.subnet.subnetId,
    subnetCidr,
    vpcId: 'vpc-0frag',
    vpcCidrs: ['10.2.0.0/16'],
    securityGroupIds: ['sg-0bench'],
  };
}
