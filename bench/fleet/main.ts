// `npm run fleet -- --nodes N --pods P --rollout-seconds S --seed X [--json]`: the fleet runner's
// command line. Runs vpcnet's agents and then the upstream-like mode (aws-node's EC2 behaviour)
// with the same seed, and prints both side by side.
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { errorText } from '../../src/infra/error-text.ts';
import { randomSeed } from '../../src/storm/prng.ts';
import { type FleetOptions, type FleetRun, runFleet } from './fleet.ts';
import type { FleetMode } from './protocol.ts';

const HELP = `Usage: npm run fleet -- --nodes N --pods P --rollout-seconds S [--seed X] [--json] [options]

N real agents (pool manager, ledger, EC2 client signing Query API calls over HTTP) with a fake
kernel, in a few worker processes, against one emulator that throttles as EC2 does for one account
(a bucket per action, EC2's published sizes). A scheduler stand-in rolls P pods out over S
seconds (spread over the nodes), holds them, replaces a share of the nodes mid-hold, deletes the
pods, lets the pools settle, and counts what the pods waited and what EC2 saw. The same run is
made with vpcnet's EC2 budget and in an upstream-like mode (each node's calls as aws-node makes
them: the SDK's standard retries, no budget, no batching), side by side.

Options:
  --nodes N              nodes (default 100)
  --pods P               pods (default 10 per node)
  --rollout-seconds S    the rollout's length (default 60)
  --seed X               the plan's seed (random when absent, and printed)
  --json                 one JSON document on stdout: {machine, runs: [vpcnet, upstream]}
                         (each mode's figures also go to stderr, one line, as it ends)
  --mode M               vpcnet, upstream or both (default both)
  --hold-seconds H       the pods run this long after the rollout (default 120)
  --delete-seconds D     the pods are deleted over this long (default: S)
  --settle-seconds W     after the deletes, the pools settle this long before the count (default 90)
  --churn R              share of the nodes replaced mid-hold (default 0.1)
  --halve-at T           halve EC2's limits T seconds after the rollout's start
  --workers W            worker processes (default: cores)
  --instance-type T      the nodes' instance type (default m5.xlarge)
  --start-rate R         nodes started per second before the rollout (default 15)
  --cold-start           nodes start with no address assigned (default: their warm pool is)
  --agent-env K=V        an agent setting for every node (repeatable), e.g. WARM_IP_TARGET=5
  --no-fleet-lease       vpcnet mode without the cluster's EC2 throttle Lease (each agent alone)
`;

function num(v: string | undefined, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${v}`);
  return n;
}

function agentEnv(pairs: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new Error(`--agent-env takes NAME=VALUE, got ${p}`);
    env[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return env;
}

export function parseFleetArgs(
  argv: string[],
): { options: Omit<FleetOptions, 'mode' | 'progress'>; modes: FleetMode[]; json: boolean } | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string' },
      pods: { type: 'string' },
      'rollout-seconds': { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'boolean' },
      mode: { type: 'string' },
      'hold-seconds': { type: 'string' },
      'delete-seconds': { type: 'string' },
      'settle-seconds': { type: 'string' },
      churn: { type: 'string' },
      'halve-at': { type: 'string' },
      workers: { type: 'string' },
      'instance-type': { type: 'string' },
      'start-rate': { type: 'string' },
      'cold-start': { type: 'boolean' },
      'agent-env': { type: 'string', multiple: true },
      'no-fleet-lease': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const nodes = num(values.nodes, 'nodes', 100);
  const rolloutSeconds = num(values['rollout-seconds'], 'rollout-seconds', 60);
  const mode = values.mode ?? 'both';
  if (mode !== 'both' && mode !== 'vpcnet' && mode !== 'upstream')
    throw new Error(`--mode must be vpcnet, upstream or both, got ${mode}`);
  const churn = num(values.churn, 'churn', 0.1);
  if (churn > 1) throw new Error(`--churn is a share of the nodes (0..1), got ${churn}`);
  const halveAt = values['halve-at'] === undefined ? undefined : num(values['halve-at'], 'halve-at', 0);
  return {
    options: {
      nodes: Math.max(1, Math.round(nodes)),
      pods: Math.round(num(values.pods, 'pods', nodes * 10)),
      rolloutSeconds,
      holdSeconds: num(values['hold-seconds'], 'hold-seconds', 120),
      deleteSeconds: num(values['delete-seconds'], 'delete-seconds', rolloutSeconds),
      settleSeconds: num(values['settle-seconds'], 'settle-seconds', 90),
      churn,
      seed: values.seed === undefined ? randomSeed() : Math.round(num(values.seed, 'seed', 0)),
      workers: Math.max(1, Math.round(num(values.workers, 'workers', availableParallelism()))),
      instanceType: values['instance-type'] ?? 'm5.xlarge',
      agentEnv: agentEnv(values['agent-env'] ?? []),
      startRate: Math.max(0.1, num(values['start-rate'], 'start-rate', 15)),
      prewarm: values['cold-start'] !== true,
      fleetLease: values['no-fleet-lease'] !== true,
      ...(halveAt === undefined ? {} : { halveAtSeconds: halveAt }),
    },
    modes: mode === 'both' ? ['vpcnet', 'upstream'] : [mode],
    json: values.json === true,
  };
}

/** The figures of each run side by side, one row per figure. */
export function formatRuns(runs: readonly FleetRun[]): string {
  const rows: [string, (r: FleetRun) => unknown][] = [
    [
      'pod start p50 / p95 / p99 / max (ms)',
      (r) => `${r.podStartMs.p50} / ${r.podStartMs.p95} / ${r.podStartMs.p99} / ${r.podStartMs.max}`,
    ],
    ['pod starts', (r) => r.podStarts],
    ['failed pod starts (failed ADDs)', (r) => r.failedPodStarts],
    ['pods never started', (r) => r.podsNeverStarted],
    ['EC2 calls', (r) => r.ec2Calls],
    ['EC2 calls per pod start', (r) => r.ec2CallsPerPodStart],
    ['throttled calls', (r) => r.throttledCalls],
    ['throttled share after 10 s', (r) => `${(r.throttledShareAfter10s * 100).toFixed(2)}%`],
    ['peak calls per second', (r) => r.peakCallsPerSecond],
    ["EC2 buckets' refill per second", (r) => r.bucketLimitPerSecond],
    ['retry storm seconds', (r) => r.retryStormSeconds],
    ['release calls while throttled', (r) => r.releaseCallsWhileThrottled],
    ['leaked addresses', (r) => r.leakedAddresses],
    ['leaked ENIs', (r) => r.leakedEnis],
    [
      'after halving: throttled share',
      (r) => (r.halved ? `${(r.halved.throttledShare * 100).toFixed(2)}%` : '-'),
    ],
    ['after halving: recovery (s)', (r) => (r.halved ? (r.halved.recoverySeconds ?? 'never') : '-')],
    ['startup (s) / agent restarts at start', (r) => `${r.startupSeconds} / ${r.agentRestarts}`],
    ['scheduler lag (ms)', (r) => r.schedulerLagMs],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const header = `${''.padEnd(width)}  ${runs.map((r) => r.mode.padEnd(24)).join('')}`;
  return [
    header,
    ...rows.map(([name, f]) => `${name.padEnd(width)}  ${runs.map((r) => String(f(r)).padEnd(24)).join('')}`),
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const parsed = parseFleetArgs(argv);
  if (parsed === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  const { options, modes, json } = parsed;
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  progress(
    `fleet: seed ${options.seed}, ${options.nodes} nodes, ${options.pods} pods, ${options.workers} workers`,
  );
  const loadBefore = loadavg();
  const runs: FleetRun[] = [];
  for (const mode of modes) {
    const run = await runFleet({ ...options, mode, progress });
    runs.push(run);
    // Each mode's figures as soon as it ends: a long run stopped during the next mode keeps them.
    progress(`fleet: ${mode} ended: ${JSON.stringify(run)}`);
  }
  const machine = { cores: availableParallelism(), loadavgBefore: loadBefore, loadavgAfter: loadavg() };
  if (json) process.stdout.write(`${JSON.stringify({ machine, options, runs }, null, 2)}\n`);
  else process.stdout.write(`${formatRuns(runs)}\n`);
  return 0;
}

if (process.argv[1] === import.meta.filename) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`fleet: ${errorText(err)}\n`);
      process.exit(1);
    },
  );
}
