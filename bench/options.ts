// The bench's command line: its sections, options and usage text (cni-bench.ts runs them).
import { parseArgs } from 'node:util';

export const SECTIONS = ['ops', 'service', 'kernel', 'cri', 'fill'] as const;
export type Section = (typeof SECTIONS)[number];

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return n;
}

export const USAGE = `usage: npm run bench -- [options]   (or: node --import tsx bench/cni-bench.ts [options])

Measures vpcnet against Debian's reference plugins (bridge + host-local) on this machine, in one
run, and prints each section's figures and then the table of vpcnet's performance goals. Needs
root, the lab's system packages (scripts/setup.sh --with-real-clients, which npm run bench runs
first) and a quiet machine: timings are noisy.

sections (--only, comma-separated; default all):
  ops      ADD and DEL one after another, then a burst of each, both plugins
  service  the agent's own ADD service time with --in-flight ADDs at once, --service-bursts times
  kernel   an ADD's kernel step through the netlink helper, alone and all at once
  cri      containerd's RunPodSandbox and Stop+RemovePodSandbox over the CRI API, both plugins
  fill     ADD and DEL as the node fills (--fill-levels), agent RSS, start-to-serving

options:
  --only LIST            sections to run
  --pods N               sequential pods in ops (100)
  --burst N              pods in each ops burst (50)
  --in-flight N          ADDs at once in service and kernel (50)
  --service-bursts N     service bursts, each on a freshly restarted agent; the goals take the median (3)
  --fill-levels LIST     attachments at which fill measures (10,50,100,200)
  --fill-pairs N         ADD+DEL pairs per fill level (30)
  --sandboxes N          sandboxes per plugin in cri (20)
  --name-prefix P        prefix of the lab's names, namespaces and files (vpcb)
  -h, --help             this text
`;

/** A command line the bench cannot run with: said in one line, with a pointer to --help. */
export class UsageError extends Error {}

/** The bench's options from `args`; UsageError for anything it cannot run with. */
export function parseOptions(args: readonly string[]) {
  try {
    return parseOptionValues(args);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

function parseOptionValues(args: readonly string[]) {
  const { values } = parseArgs({
    args: [...args],
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      only: { type: 'string', default: SECTIONS.join(',') },
      pods: { type: 'string', default: '100' },
      burst: { type: 'string', default: '50' },
      'in-flight': { type: 'string', default: '50' },
      'service-bursts': { type: 'string', default: '3' },
      'fill-levels': { type: 'string', default: '10,50,100,200' },
      'fill-pairs': { type: 'string', default: '30' },
      sandboxes: { type: 'string', default: '20' },
      // Names of the lab, its namespaces and files start with it (and a random suffix).
      'name-prefix': { type: 'string', default: 'vpcb' },
    },
  });
  const only = values.only.split(',').map((s) => s.trim());
  const unknown = only.filter((s) => !(SECTIONS as readonly string[]).includes(s));
  if (unknown.length > 0)
    throw new Error(`--only: unknown section ${unknown.join(', ')} (sections: ${SECTIONS.join(', ')})`);
  return {
    help: values.help,
    sections: new Set(only as Section[]),
    pods: positiveInt('pods', values.pods),
    burst: positiveInt('burst', values.burst),
    inFlight: positiveInt('in-flight', values['in-flight']),
    serviceBursts: positiveInt('service-bursts', values['service-bursts']),
    fillLevels: values['fill-levels'].split(',').map((s) => positiveInt('fill-levels', s.trim())),
    fillPairs: positiveInt('fill-pairs', values['fill-pairs']),
    sandboxes: positiveInt('sandboxes', values.sandboxes),
    namePrefix: values['name-prefix'],
  };
}
export type Options = ReturnType<typeof parseOptions>;
