// `vpcnetctl audit` (and `kubectl vpcnet audit`): the cluster-wide, read-only audit, its report
// for people or as JSON, and `--repair --from-report`. Against a lab (`--lab NAME`) it runs the
// same code inside the lab's VPC namespace, with the lab's EC2 and Kubernetes endpoints and its
// agents' sockets: only where things are differs.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createAwsClients } from '../../cloud/aws/create-aws-cloud.ts';
import { inClusterApi } from '../../config/agent-config.ts';
import { CAPACITY_SETTINGS } from '../../config/settings-capacity.ts';
import { errorText } from '../../infra/error-text.ts';
import { labLayout } from '../../lab/layout.ts';
import { KubeClient } from '../../pods/kube-client.ts';
import type { CliEnv } from '../cli-env.ts';
import { readLabDescription } from '../node/node-target.ts';
import {
  colourWanted,
  EXIT_DEGRADED,
  EXIT_DOWN,
  EXIT_HEALTHY,
  jsonDocument,
  printer,
  table,
} from '../output.ts';
import { rerunInNetns } from '../rerun-in-netns.ts';
import { UsageError } from '../usage-error.ts';
import { type AuditReport, runAudit } from './audit.ts';
import type { AuditFinding } from './findings.ts';
import { repairFromReport } from './repair.ts';
import {
  type AgentSource,
  countedEc2,
  DEFAULT_AGENT_READS,
  type KubeGet,
  kubeClientGet,
  kubectlExecAgents,
  kubectlGet,
  socketAgents,
} from './sources.ts';

/** The audit could not read what it needs (EC2, the API): no verdict. */
export const EXIT_AUDIT_FAILED = 4;

export const AUDIT_HELP = `Usage: vpcnetctl audit [--json] [--interval S] [source options]
       vpcnetctl audit --lab NAME [--json] [--interval S]
       vpcnetctl audit --repair --from-report FILE [--min-age S] [source options | --lab NAME]
       kubectl vpcnet audit ...                      (the same, as a kubectl plugin)

Read-only and cluster-wide: every agent's state (its ledger and pool), every pod in the API, and
EC2's ENIs and subnets of the cluster's VPC, compared. It reports
  unowned-address       an address EC2 assigns a node's ENI that neither its pool nor a record has
  record-pod-gone       a ledger record whose pod the API no longer has (no DEL came)
  address-on-two-nodes  one address held on two nodes (two ledgers, or a ledger and EC2)  critical
  pod-ip-mismatch       a pod's IPs in the API (status, vpc.amazonaws.com/pod-ips) differ from the ledger
  detached-eni          an ENI of vpcnet's attached to nothing
  draining-subnet-eni   an ENI still serving pods from a subnet tagged kubernetes.io/role/cni=0
  branch-mismatch       a pod's vpc.amazonaws.com/pod-eni annotation and EC2 disagree
  held-address-missing  a pod's address that EC2 no longer assigns its ENI                critical
  agent-unreachable     an agent that could not be read (its node is not audited)
and, per subnet, the free addresses and the free /28 blocks (the subnet census's count). A finding counts only when two reads
--interval apart both show it (churn shows once). EC2 calls: ⌈ENIs/1000⌉ + 1, and one more per
200 ENIs a finding rests on when there is one.

Sources (a cluster by default):
  --kubectl PATH       kubectl to read the API with, and to exec into each vpcnet pod for its
                       agent's state (default kubectl; the kubeconfig decides where and who)
  --context NAME       kubectl's --context
  --kube-api URL       the API at URL instead of kubectl (in a pod: KUBERNETES_SERVICE_HOST)
  --agent-socket NODE=PATH
                       read NODE's agent at its socket (repeatable) instead of kubectl exec
  --parallel N         agents read at once (default 16; in a cluster each is a kubectl exec)
  --namespace NS, --selector SEL
                       where the vpcnet pods are (default kube-system, k8s-app=vpcnet)
  --census-lease NS/NAME
                       the subnet census Lease (VPCNET_SUBNET_CENSUS_LEASE; default
                       kube-system/vpcnet-subnet-census): its CIDR reservations count in the
                       free addresses and /28s
  --region R, --ec2-endpoint URL, --vpc-id V
                       EC2 (default AWS_REGION, the regional endpoint, the VPC the agents name);
                       credentials: the AWS SDK's usual chain (environment, profile, IRSA, ...)
  --cluster-name NAME  the cluster's CLUSTER_NAME (default: the one the agents name): vpcnet ENIs
                       tagged cluster.k8s.amazonaws.com/name for another cluster of the VPC are
                       not reported (with no name, none tagged with one is)
  --lab NAME           a lab on this machine: its emulator, API and agents
Output:
  --json               one JSON document: {"findings": [...], "subnets": [...], ...}; each finding
                       names its class, severity, node, pod, address or ENI, message and fix
  --interval S         seconds between the two reads (default 10; EC2's describes may lag that
                       long; the agent's own sync waits VPCNET_EC2_STALE_SECONDS)
Repair (only the classes the ledgers prove no pod holds: unowned-address, detached-eni):
  --repair --from-report FILE
                       act on a report saved with --json: each finding checked again first;
                       unowned addresses are unassigned, detached ENIs deleted
  --min-age S          a detached ENI younger than this is left alone (default 300)
Exit codes: 0 no finding, 1 warnings, 3 a critical finding, 4 the audit could not read EC2 or
the API, 2 usage error. With --repair: 0, or 1 when a repair failed.
`;

function agentSocketsOf(pairs: readonly string[]): { node: string; socket: string }[] {
  return pairs.map((p) => {
    const eq = p.indexOf('=');
    if (eq < 1) throw new UsageError(`--agent-socket takes NODE=PATH, not ${JSON.stringify(p)}`);
    return { node: p.slice(0, eq), socket: p.slice(eq + 1) };
  });
}

/** The census Lease as the agents name it (VPCNET_SUBNET_CENSUS_LEASE), its default theirs. */
function censusLeaseOf(text: string | undefined): string {
  const setting = CAPACITY_SETTINGS.subnetCensusLease;
  if (text === undefined) return setting.fallback;
  const lease = setting.kind.parse(text);
  if (lease === undefined)
    throw new UsageError(`--census-lease takes ${setting.kind.what}, not ${JSON.stringify(text)}`);
  return lease;
}

function parallelOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_AGENT_READS;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new UsageError(`--parallel takes a whole number from 1 to 256, not ${JSON.stringify(text)}`);
  return n;
}

function intervalOf(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0)
    throw new UsageError(`${flag} takes a number of seconds, not ${JSON.stringify(text)}`);
  return n * 1000;
}

function findingLines(f: AuditFinding, colour: boolean): string[] {
  const p = printer(colour);
  const tag = f.severity === 'critical' ? p.tone('bad', 'CRITICAL') : p.tone('warn', 'WARNING ');
  const subject = [f.node, f.pod, f.address, f.eniId].filter((x) => x !== undefined).join('  ');
  return [
    `${tag} ${p.tone('strong', f.class)}  ${subject}`,
    `         ${f.message}`,
    `         fix: ${f.fix}`,
  ];
}

export function renderAudit(r: AuditReport, colour: boolean): string {
  const lines: string[] = [];
  for (const f of r.findings) lines.push(...findingLines(f, colour));
  const subnetRows = r.subnets.map((s) => [
    s.subnetId,
    s.availabilityZone,
    s.cidr,
    String(s.freeAddresses),
    String(s.ec2FreeAddresses),
    `${s.free28s}${s.reservationsKnown ? '' : ' *'}`,
    String(s.enis),
    s.tags['kubernetes.io/role/cni'] ?? '-',
  ]);
  if (lines.length > 0) lines.push('');
  lines.push(
    table(
      ['subnet', 'zone', 'cidr', 'free addresses', 'EC2 says free', 'free /28s', 'enis', 'role/cni'],
      subnetRows,
    ).trimEnd(),
  );
  if (r.subnets.some((s) => !s.reservationsKnown))
    lines.push(
      `* not counting the subnet's CIDR reservations: ${r.censusNote ?? 'the census Lease has none for it (no census of it yet)'}`,
    );
  const critical = r.findings.filter((f) => f.severity === 'critical').length;
  const verdict =
    r.findings.length === 0
      ? printer(colour).tone('good', 'no finding')
      : `${r.findings.length} finding(s), ${critical} critical`;
  const churn =
    r.unconfirmed === 0 ? '' : `; ${r.unconfirmed} difference(s) seen in one read only (churn), not counted`;
  lines.push(
    '',
    `audited ${r.nodes.length} node(s), ${r.pods} pod(s), ${r.enis} ENI(s) of ${r.vpcId} in ${r.reads} read(s), ${r.ec2Calls} EC2 call(s), ${(r.ms / 1000).toFixed(1)} s: ${verdict}${churn}`,
  );
  return `${lines.join('\n')}\n`;
}

export function exitCodeOfAudit(r: AuditReport): number {
  if (r.findings.some((f) => f.severity === 'critical')) return EXIT_DOWN;
  return r.findings.length > 0 ? EXIT_DEGRADED : EXIT_HEALTHY;
}

interface Sources {
  readonly kube: KubeGet;
  readonly agents: () => Promise<AgentSource[]>;
}

function sourcesOf(values: Record<string, unknown>, env: CliEnv): Sources {
  const kubectl = [
    typeof values.kubectl === 'string' ? values.kubectl : 'kubectl',
    ...(typeof values.context === 'string' ? ['--context', values.context] : []),
  ];
  const sockets = agentSocketsOf((values['agent-socket'] as string[] | undefined) ?? []);
  const host = env.env.KUBERNETES_SERVICE_HOST;
  const api =
    typeof values['kube-api'] === 'string'
      ? { baseUrl: values['kube-api'].replace(/\/$/, '') }
      : host !== undefined && host !== '' && values.kubectl === undefined
        ? inClusterApi(host, Number(env.env.KUBERNETES_SERVICE_PORT ?? '443'))
        : undefined;
  const kube =
    api === undefined ? kubectlGet(kubectl) : kubeClientGet(new KubeClient(api, { timeoutMs: 30_000 }));
  if (sockets.length > 0) return { kube, agents: socketAgents(sockets) };
  const namespace = typeof values.namespace === 'string' ? values.namespace : 'kube-system';
  const selector = typeof values.selector === 'string' ? values.selector : 'k8s-app=vpcnet';
  return { kube, agents: kubectlExecAgents(kubectl, kube, namespace, selector) };
}

/** Runs this command again inside the lab's VPC namespace, with the lab's endpoints and agents. */
async function runInLab(lab: string, forward: readonly string[], env: CliEnv): Promise<number> {
  const description = await readLabDescription(lab);
  const layout = labLayout(lab, description.nodes.length);
  const args = [
    'audit',
    '--region',
    layout.vpc.region,
    '--ec2-endpoint',
    layout.emulator.ec2Endpoint,
    '--kube-api',
    layout.emulator.kubeEndpoint,
    ...layout.nodes.flatMap((n) => ['--agent-socket', `${n.name}=${n.agentSocket}`]),
    ...forward,
  ];
  const childEnv = {
    PATH: env.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    AWS_ACCESS_KEY_ID: 'lab-audit',
    AWS_SECRET_ACCESS_KEY: 'lab',
    AWS_EC2_METADATA_DISABLED: 'true',
    ...(env.env.NO_COLOR === undefined ? {} : { NO_COLOR: env.env.NO_COLOR }),
  };
  return rerunInNetns(layout.vpcNetns, args, childEnv, env);
}

export async function runAuditCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      interval: { type: 'string' },
      lab: { type: 'string' },
      kubectl: { type: 'string' },
      context: { type: 'string' },
      'kube-api': { type: 'string' },
      'agent-socket': { type: 'string', multiple: true },
      namespace: { type: 'string' },
      selector: { type: 'string' },
      region: { type: 'string' },
      'ec2-endpoint': { type: 'string' },
      'vpc-id': { type: 'string' },
      'cluster-name': { type: 'string' },
      'census-lease': { type: 'string' },
      parallel: { type: 'string' },
      repair: { type: 'boolean' },
      'from-report': { type: 'string' },
      'min-age': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    env.out(AUDIT_HELP);
    return 0;
  }
  if ((values.repair === true) !== (values['from-report'] !== undefined))
    throw new UsageError('--repair acts on a saved report: give both --repair and --from-report FILE');
  const intervalMs = intervalOf(values.interval, '--interval', 10_000);
  const parallel = parallelOf(values.parallel);
  const minAgeMs = intervalOf(values['min-age'], '--min-age', 300_000);
  if (values.lab !== undefined) {
    for (const own of [
      'kubectl',
      'context',
      'kube-api',
      'agent-socket',
      'namespace',
      'selector',
      'region',
      'ec2-endpoint',
    ] as const)
      if (values[own] !== undefined)
        throw new UsageError(`--${own} does not go with --lab (the lab's are used)`);
    const forward = [
      ...(values.json === true ? ['--json'] : []),
      ...(values.interval === undefined ? [] : ['--interval', values.interval]),
      ...(values['vpc-id'] === undefined ? [] : ['--vpc-id', values['vpc-id']]),
      ...(values['cluster-name'] === undefined ? [] : ['--cluster-name', values['cluster-name']]),
      ...(values['census-lease'] === undefined ? [] : ['--census-lease', values['census-lease']]),
      ...(values.parallel === undefined ? [] : ['--parallel', values.parallel]),
      ...(values.repair === true ? ['--repair', '--from-report', values['from-report'] ?? ''] : []),
      ...(values['min-age'] === undefined ? [] : ['--min-age', values['min-age']]),
    ];
    return runInLab(values.lab, forward, env);
  }
  const sources = sourcesOf(values, env);
  let clients: Awaited<ReturnType<typeof createAwsClients>>;
  try {
    clients = await createAwsClients({
      env: {
        ...env.env,
        ...(values.region === undefined ? {} : { AWS_REGION: values.region }),
        ...(values['ec2-endpoint'] === undefined ? {} : { AWS_ENDPOINT_URL_EC2: values['ec2-endpoint'] }),
      },
      requestTimeoutMs: 30_000,
    });
  } catch (err) {
    env.err(
      `vpcnetctl audit: no EC2 client: ${errorText(err)} (give --region or AWS_REGION, and credentials)\n`,
    );
    return EXIT_AUDIT_FAILED;
  }
  const ec2 = countedEc2(clients.ec2);
  try {
    if (values.repair === true) {
      const saved = JSON.parse(await readFile(values['from-report'] ?? '', 'utf8')) as {
        findings?: AuditFinding[];
      };
      if (!Array.isArray(saved.findings))
        throw new UsageError(`${values['from-report']} is no audit report (no findings)`);
      const outcomes = await repairFromReport(saved.findings, {
        ec2,
        agents: sources.agents,
        minAgeMs,
        parallel,
      });
      env.out(
        values.json === true
          ? jsonDocument({ repairs: outcomes, ec2Calls: ec2.calls })
          : `${table(
              ['finding', 'action', 'detail'],
              outcomes.map((o) => [o.key, o.action, o.detail]),
            ).trimEnd()}\n`,
      );
      return outcomes.some((o) => o.action === 'failed') ? EXIT_DEGRADED : EXIT_HEALTHY;
    }
    let report: AuditReport;
    try {
      report = await runAudit({
        ec2,
        kube: sources.kube,
        agents: sources.agents,
        intervalMs,
        parallel,
        censusLease: censusLeaseOf(values['census-lease']),
        ...(values['vpc-id'] === undefined ? {} : { vpcId: values['vpc-id'] }),
        ...(values['cluster-name'] === undefined ? {} : { clusterName: values['cluster-name'] }),
      });
    } catch (err) {
      if (err instanceof UsageError) throw err;
      env.err(`vpcnetctl audit: ${errorText(err)}\n`);
      return EXIT_AUDIT_FAILED;
    }
    const json = values.json === true;
    env.out(json ? jsonDocument(report) : renderAudit(report, colourWanted(env.stdoutIsTty, env.env, json)));
    return exitCodeOfAudit(report);
  } finally {
    clients.transport.close();
  }
}
