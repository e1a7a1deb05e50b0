// `npm run storm -- --seed S --pods N --ops K [...]`: the storm simulator's command line.
import { parseArgs } from 'node:util';
import { errorText } from '../infra/error-text.ts';
import { randomSeed } from './prng.ts';
import { formatFigures, formatTaints, runStorm } from './storm.ts';

const HELP = `Usage: npm run storm -- [--seed S] [--pods N] [--ops K] [options]

Plays kubelet and container runtime against a lab of one node (as root): pods created and
deleted, sandboxes replaced with the old DEL early, late or concurrent, duplicate DELs, DELs with
an empty CNI_NETNS, concurrent operations, the agent killed with SIGKILL (also mid-ADD and
mid-DEL), and the emulator's faults (throttling, 5xx, latency, stale EC2 and IMDS reads) switched
on and off. After every step it checks live sandboxes and that no address has two holders; at the
end that ledger, kernel and EC2 agree, and after deleting every pod and one CNI GC that nothing
is left or leaked. On a violation it prints the operation log and exits 1.

Reproducibility: the operation sequence is a pure function of the seed (and --pods, --ops,
--kill-rate, --fault-rate, --sg-pods). The interleavings inside a step (concurrent calls, where
a kill lands, which EC2 calls a fault hits) depend on timing and vary between runs.

Options:
  --seed S          seed (an integer; random when absent, and printed)
  --pods N          most pods live at once (default 8)
  --ops K           operations (default 60)
  --kill-rate R     share of steps that kill the agent (default 0.08)
  --fault-rate R    share of steps that switch faults (default 0.1)
  --sg-pods         a lab with pod ENIs (m5.large); about a third of the pods have security groups
  --readiness-taint VPCNET_NODE_READINESS=taint on the node; a false vpcnet.io/ip-exhausted taint
                    (held past 3 s while the pool could serve: a warm target's worth free, or some
                    free and room to grow; judged from the emulator's API log) fails the storm
  --agent-env K=V   one more setting of the node's agent (repeatable), e.g. WARM_IP_TARGET=3
  --instance-type T the node's instance type (default m5.large)
  --lab NAME        the lab's name (default st<seed>); its namespaces start with NAME-
  --keep-lab        leave the lab up afterwards (remove it with vpcnetctl lab down --name NAME)
`;

function number(v: string | undefined, name: string, fallback: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${v}`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string' },
      pods: { type: 'string' },
      ops: { type: 'string' },
      'kill-rate': { type: 'string' },
      'fault-rate': { type: 'string' },
      'sg-pods': { type: 'boolean' },
      'readiness-taint': { type: 'boolean' },
      'agent-env': { type: 'string', multiple: true },
      'instance-type': { type: 'string' },
      lab: { type: 'string' },
      'keep-lab': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const seed = Math.floor(number(values.seed, 'seed', randomSeed()));
  const sgPods = values['sg-pods'] === true;
  process.stdout.write(`storm seed ${seed}\n`);
  const { figures, opLog, taints } = await runStorm({
    seed,
    pods: Math.max(1, Math.floor(number(values.pods, 'pods', 8))),
    ops: Math.floor(number(values.ops, 'ops', 60)),
    killRate: number(values['kill-rate'], 'kill-rate', 0.08),
    faultRate: number(values['fault-rate'], 'fault-rate', 0.1),
    sgShare: sgPods ? 0.35 : 0,
    sgPods,
    instanceType: values['instance-type'],
    labName: values.lab ?? `st${seed}`.slice(0, 20),
    keepLab: values['keep-lab'] === true,
    readinessTaint: values['readiness-taint'] === true,
    agentEnv: values['agent-env'] ?? [],
    log: (line) => process.stdout.write(`${line}\n`),
  });
  if (figures.violations.length > 0) {
    process.stdout.write(
      `\nSTORM FAILED (seed ${seed}). Operation log:\n${opLog.join('\n')}\n\nViolations:\n`,
    );
    for (const v of figures.violations) process.stdout.write(`  ${v}\n`);
  }
  process.stdout.write(`\nseed ${seed}\n${formatFigures(figures)}\n`);
  if (taints !== undefined) process.stdout.write(`${formatTaints(taints)}\n`);
  return figures.violations.length > 0 || (taints?.falseTaints ?? 0) > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`storm: ${errorText(err)}\n`);
    process.exit(2);
  },
);
