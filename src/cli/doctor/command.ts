// `vpcnetctl doctor`: the preflight, on a node (`--agent-socket`, the node's configuration in the
// environment, its files under --node-root) or on a lab's node (`--lab NAME [--node N]`: run in the
// node's network namespace with its agent's environment, the lab node's directory as its root).
// As the DaemonSet's init step (`--init`) it writes its findings beside the agent's socket and
// exits 0: the agent starts, and its readiness probe holds with the first error's reason.
import { readFile, rename, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET, defaultAgentSocket } from '../../cni/wire.ts';
import { type LabNode, labLayout } from '../../lab/layout.ts';
import { agentRole } from '../../lab/processes/agents.ts';
import { isRecordedProcessAlive, readRecords } from '../../lab/processes/processes.ts';
import type { CliEnv } from '../cli-env.ts';
import { labNodeName, readLabDescription } from '../node/node-target.ts';
import { colourWanted, EXIT_DEGRADED, EXIT_DOWN, EXIT_HEALTHY, jsonDocument, printer } from '../output.ts';
import { rerunInNetns } from '../rerun-in-netns.ts';
import { UsageError } from '../usage-error.ts';
import { DEFAULT_PATHS, type DoctorPaths } from './context.ts';
import { DOCTOR_CHECKS, runDoctor } from './doctor.ts';
import type { DoctorReport } from './finding.ts';
import { findingsFileOf } from './findings-file.ts';

export const DOCTOR_HELP = `Usage: vpcnetctl doctor [--json] [--agent-socket PATH] [--node-root DIR] [--env NAME=VALUE ...]
       vpcnetctl doctor --lab NAME [--node N] [--json] [--env NAME=VALUE ...]
       vpcnetctl doctor --init [--node-root DIR]          (the DaemonSet's init step)

A preflight of this node for the vpcnet agent, with its configuration (the environment the agent
gets), read-only: nothing in EC2, Kubernetes or on the node is changed. It checks:
  configuration     the agent's settings parse; aws-node settings that mean nothing here
  imds              IMDSv2 answers (else why: endpoint off, hop limit 1)
  endpoints         EC2 and STS answer, and take the agent's credentials
  ec2-permissions   every EC2 action the agent will call: DryRun=true where EC2's API has it
                    (DryRunOperation / UnauthorizedOperation), IAM's policy simulator for
                    AssignPrivateIpAddresses, UnassignPrivateIpAddresses and the IPv6 forms, else
                    named as not verifiable ahead
  subnets           with subnet discovery, a subnet of the node's zone may take new ENIs
  eni-config        with custom networking, the node's ENIConfig, its subnet (VPC, zone), its groups
  max-pods          kubelet's maxPods within what the node can address in its mode
  rp-filter         no strict reverse-path filtering on the primary ENI's link
  network-manager   NetworkManager leaves the secondary ENIs alone
  systemd-networkd  networkd leaves the secondary ENIs and vpcnet's rules alone
  vlan-module       802.1q for the vlan trunk driver
  kubernetes-api    the API answers for this node's name
  kube-proxy        not IPVS mode with pods that have their own security groups
  instance-type     EC2 describes the node's instance type
  eni-attachments   the primary ENI and vpcnet's ENIs go with the instance (DeleteOnTermination)
Each finding has a one-line fix. Checks that cannot look (no kubelet config, no API) are listed
as skipped, not as findings.

  --json              one JSON document: {"findings": [...], "passed": [...], "skipped": [...], "ms": N}
  --agent-socket PATH the running agent (default ${DEFAULT_AGENT_SOCKET}): names the instance when
                      IMDS cannot, and --init's findings go beside it
  --node-root DIR     where the node's /etc (and /var/lib/kubelet, /run/systemd) are (default /;
                      the DaemonSet mounts the host's at /host)
  --proc-sys DIR, --sys DIR, --modules DIR
                      the node network namespace's /proc/sys and /sys, the module tree
                      (defaults /proc/sys, /sys, /lib/modules)
  --env NAME=VALUE    check as if the agent's environment had this too (repeatable)
  --lab NAME          a node of lab NAME: in its network namespace, with its agent's environment
  --node N            with --lab: node1..N or 1..N (default node1)
  --init              write the findings to doctor.json beside the agent's socket and exit 0: the
                      agent's readiness probe (vpcnetctl health) then fails naming the first error
  --write-findings F  also write the JSON document to F
Exit codes: 0 no finding, 1 warnings only, 3 errors (the agent will not work), 2 usage error.
`;

function parseEnvPairs(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of pairs) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(pair);
    if (m === null) throw new UsageError(`--env takes NAME=VALUE, not ${JSON.stringify(pair)}`);
    out[m[1] ?? ''] = m[2] ?? '';
  }
  return out;
}

export function exitCodeOfReport(report: DoctorReport): number {
  if (report.findings.some((f) => f.severity === 'error')) return EXIT_DOWN;
  return report.findings.length > 0 ? EXIT_DEGRADED : EXIT_HEALTHY;
}

export function renderReport(report: DoctorReport, colour: boolean): string {
  const p = printer(colour);
  const lines: string[] = [];
  for (const f of report.findings) {
    const tag = f.severity === 'error' ? p.tone('bad', 'ERROR  ') : p.tone('warn', 'WARNING');
    lines.push(
      `${tag} ${p.tone('strong', f.check)}  ${f.subject}`,
      `        ${f.message}`,
      `        fix: ${f.fix}`,
    );
  }
  const errors = report.findings.filter((f) => f.severity === 'error').length;
  const warnings = report.findings.length - errors;
  const verdict =
    report.findings.length === 0
      ? p.tone('good', 'no finding')
      : `${errors} error(s), ${warnings} warning(s)`;
  lines.push(
    '',
    `${DOCTOR_CHECKS.length} checks in ${(report.ms / 1000).toFixed(1)} s: ${verdict}; ${report.passed.length} passed, ${report.skipped.length} skipped (--json lists them)`,
  );
  return `${lines.join('\n')}\n`;
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, text, { mode: 0o644 });
  await rename(tmp, path);
}

/** The running agent's environment on a lab node: the configuration the doctor checks there. */
async function labAgentEnv(lab: string, node: LabNode): Promise<Record<string, string>> {
  const layout = labLayout(lab, 0);
  const record = (await readRecords(layout.files.pidsDir)).find((r) => r.role === agentRole(node));
  if (record === undefined || !isRecordedProcessAlive(record))
    throw new Error(
      `the agent of ${node.name} in lab ${lab} is not running; the doctor reads its configuration from it`,
    );
  const raw = await readFile(`/proc/${record.pid}/environ`, 'utf8');
  return Object.fromEntries(
    raw
      .split('\0')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/** Runs this command again inside the lab node's network namespace, as that node would. */
async function runOnLabNode(
  lab: string,
  nodeArg: string | undefined,
  forward: readonly string[],
  overrides: Record<string, string>,
  env: CliEnv,
): Promise<number> {
  const description = await readLabDescription(lab);
  const node = labNodeName(description, nodeArg);
  const labNode = labLayout(lab, description.nodes.length).nodes.find((n) => n.name === node);
  if (labNode === undefined) throw new UsageError(`lab ${lab} has no node ${node}`);
  const agentEnv = await labAgentEnv(lab, labNode);
  const args = ['doctor', '--agent-socket', labNode.agentSocket, '--node-root', labNode.nodeRoot, ...forward];
  return rerunInNetns(labNode.netns, args, { ...agentEnv, ...overrides }, env);
}

export async function runDoctorCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      'agent-socket': { type: 'string' },
      'node-root': { type: 'string' },
      'proc-sys': { type: 'string' },
      sys: { type: 'string' },
      modules: { type: 'string' },
      env: { type: 'string', multiple: true },
      lab: { type: 'string' },
      node: { type: 'string' },
      init: { type: 'boolean' },
      'write-findings': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    env.out(DOCTOR_HELP);
    return 0;
  }
  const overrides = parseEnvPairs(values.env ?? []);
  if (values.lab !== undefined) {
    for (const own of ['agent-socket', 'node-root', 'proc-sys', 'sys', 'init'] as const)
      if (values[own] !== undefined)
        throw new UsageError(`--${own} does not go with --lab (a lab node's are the lab's)`);
    const forward = [
      ...(values.json === true ? ['--json'] : []),
      ...(values.modules === undefined ? [] : ['--modules', values.modules]),
      ...(values['write-findings'] === undefined ? [] : ['--write-findings', values['write-findings']]),
    ];
    return runOnLabNode(values.lab, values.node, forward, overrides, env);
  }
  if (values.node !== undefined) throw new UsageError('--node picks a node of a lab: add --lab NAME');
  const agentSocket = values['agent-socket'] ?? defaultAgentSocket(env.env);
  const paths: DoctorPaths = {
    ...DEFAULT_PATHS,
    ...(values['node-root'] === undefined ? {} : { nodeRoot: values['node-root'] }),
    ...(values['proc-sys'] === undefined ? {} : { procSys: values['proc-sys'] }),
    ...(values.sys === undefined ? {} : { sys: values.sys }),
    ...(values.modules === undefined ? {} : { modules: values.modules }),
  };
  const report = await runDoctor({ env: { ...env.env, ...overrides }, paths, agentSocket });
  const doc = jsonDocument(report);
  if (values['write-findings'] !== undefined) await writeAtomically(values['write-findings'], doc);
  if (values.init === true) await writeAtomically(findingsFileOf(agentSocket), doc);
  const json = values.json === true;
  env.out(json ? doc : renderReport(report, colourWanted(env.stdoutIsTty, env.env, json)));
  return values.init === true ? EXIT_HEALTHY : exitCodeOfReport(report);
}
