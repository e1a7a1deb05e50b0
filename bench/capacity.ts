// Benchmark (not a test): what the subnet census buys in a fragmented subnet. The same seeded /20
// (other tenants' addresses all over it), the same nodes and the same stream of pod starts and
// stops, played once as upstream does (prefixes asked blindly, /32 fallback picked by EC2 at
// random) and once with the census (no prefix asked of a subnet without a free /28, /32s named in
// broken /28s), in one run, on a simulated clock: real pool managers, the AWS driver over HTTP and
// the emulator's EC2 and Kubernetes API, no kernel. Prints both runs' figures and their ratios.
//
//   node --import tsx bench/capacity.ts [--nodes 50] [--pods 10000] [--seed 1] [--seeds 1,2,3]
import { parseArgs } from 'node:util';
import { type RunFigures, runFragmentation } from './capacity/fragmentation-run.ts';

const USAGE = `usage: node --import tsx bench/capacity.ts [--nodes N] [--pods N] [--seed S | --seeds S1,S2,...]
  --nodes N        nodes (m5.large, prefix delegation, WARM_PREFIX_TARGET=1) in the subnet (50)
  --pods N         pod starts, each stopped again before the end (10000)
  --population N   pods running at once the stream hovers around (16 per node)
  --tenants N      other tenants' ENIs in the /20, each with 3 addresses EC2 placed at random (120)
  --seeds L        seeds of the subnet's fragmentation and of the stream, one comparison each (1)
`;

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return n;
}

function row(label: string, up: number | string, census: number | string, ratio = ''): string {
  return `  ${label.padEnd(40)} ${String(up).padStart(10)} ${String(census).padStart(10)}  ${ratio}`;
}

function report(up: RunFigures, c: RunFigures): string[] {
  const times = (a: number, b: number) => (a === 0 ? (b === 0 ? '=' : '∞×') : `${(b / a).toFixed(2)}×`);
  const fewer = (a: number, b: number) => (a === 0 ? 'n/a' : `${Math.round((1 - b / a) * 100)} % fewer`);
  return [
    row('', 'upstream', 'census'),
    row('free /28s at start', up.freePrefixesAtStart, c.freePrefixesAtStart),
    row(
      'free /28s when the last pod started',
      up.freePrefixesUnderLoad,
      c.freePrefixesUnderLoad,
      times(up.freePrefixesUnderLoad, c.freePrefixesUnderLoad),
    ),
    row(
      'free /28s at the end',
      up.freePrefixesAtEnd,
      c.freePrefixesAtEnd,
      times(up.freePrefixesAtEnd, c.freePrefixesAtEnd),
    ),
    row(
      'InsufficientCidrBlocks answers',
      up.insufficientCidrBlocks,
      c.insufficientCidrBlocks,
      fewer(up.insufficientCidrBlocks, c.insufficientCidrBlocks),
    ),
    row('prefix asks spared by the census', up.prefixAsksSpared, c.prefixAsksSpared),
    row(
      'secondary IPs named / counted',
      `${up.secondaryIps.named}/${up.secondaryIps.counted}`,
      `${c.secondaryIps.named}/${c.secondaryIps.counted}`,
    ),
    row('named IPs another tenant took first', up.secondaryIps.collisions, c.secondaryIps.collisions),
    row('census describes of the subnet', up.censusDescribes, c.censusDescribes),
    row('EC2 calls in all', total(up), total(c)),
    row('failed pool passes', up.failedPasses, c.failedPasses),
    row('pod starts that waited for an address', up.startsThatWaited, c.startsThatWaited),
    row('longest wait (simulated s)', up.longestWaitS, c.longestWaitS),
    row(
      'simulated / wall seconds',
      `${up.simulatedS}/${up.wallS.toFixed(0)}`,
      `${c.simulatedS}/${c.wallS.toFixed(0)}`,
    ),
  ];
}

function total(f: RunFigures): number {
  return Object.values(f.ec2Calls).reduce((a, b) => a + b, 0);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string' },
      pods: { type: 'string' },
      seed: { type: 'string' },
      seeds: { type: 'string' },
      population: { type: 'string' },
      tenants: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const nodes = positive('nodes', values.nodes, 50);
  const pods = positive('pods', values.pods, 10_000);
  const seeds = (values.seeds ?? values.seed ?? '1').split(',').map((s) => positive('seeds', s, 1));
  const population = positive('population', values.population, 16 * nodes);
  const tenants = positive('tenants', values.tenants, 120);
  const preFragmentation = { tenantEnis: tenants, addressesPerEni: 2 };
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  for (const seed of seeds) {
    const common = { nodes, pods, seed, population, preFragmentation, progress };
    const up = await runFragmentation({ mode: 'upstream', ...common });
    const census = await runFragmentation({ mode: 'census', ...common });
    process.stdout.write(
      `seed ${seed}: ${nodes} nodes, ${pods} pod starts and stops, ~${population} pods at once, a /20 pre-fragmented by ${tenants} tenant ENIs of 3 addresses\n`,
    );
    process.stdout.write(`${report(up, census).join('\n')}\n\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  process.exit(1);
});
