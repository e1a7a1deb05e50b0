// The preflight doctor's run: the configuration, who the node is (IMDS), whether EC2 and STS
// answer, then every other check at once (they only read). Findings are sorted errors first.

import { unhonouredUpstreamVariables } from '../../config/settings.ts';
import { errorText } from '../../infra/error-text.ts';
import {
  checkEniAttachments,
  checkInstanceType,
  checkKubeProxy,
  checkKubernetesApi,
} from './checks/cluster.ts';
import { checkEndpoints } from './checks/endpoints.ts';
import { nodeIdentity } from './checks/identity.ts';
import {
  checkMaxPods,
  checkNetworkd,
  checkNetworkManager,
  checkRpFilter,
  checkVlanModule,
} from './checks/node-files.ts';
import { checkPermissions } from './checks/permissions.ts';
import { checkEniConfig, checkSubnets } from './checks/subnets.ts';
import {
  type DoctorCloud,
  type DoctorContext,
  type DoctorPaths,
  doctorCloud,
  doctorImds,
  doctorKube,
  parseConfig,
  skip,
} from './context.ts';
import { type DoctorFinding, type DoctorReport, type DoctorSkip, sortFindings } from './finding.ts';

export interface DoctorRun {
  /** The node's configuration: the agent's environment. */
  readonly env: NodeJS.ProcessEnv;
  readonly paths: DoctorPaths;
  /** The running agent's socket, if any: names the instance when IMDS cannot. */
  readonly agentSocket?: string;
  readonly now?: () => number;
}

interface Check {
  readonly name: string;
  readonly run: (ctx: DoctorContext) => Promise<void>;
  /** It reads EC2: skipped when EC2 does not answer (the endpoints finding says why). */
  readonly readsEc2: boolean;
}

/** Every check after the node is known; each adds findings or skips to the context. */
const CHECKS: readonly Check[] = [
  { name: 'ec2-permissions', run: checkPermissions, readsEc2: true },
  { name: 'subnets', run: checkSubnets, readsEc2: true },
  { name: 'eni-config', run: checkEniConfig, readsEc2: true },
  { name: 'max-pods', run: checkMaxPods, readsEc2: true },
  { name: 'rp-filter', run: checkRpFilter, readsEc2: false },
  { name: 'network-manager', run: checkNetworkManager, readsEc2: false },
  { name: 'systemd-networkd', run: checkNetworkd, readsEc2: false },
  { name: 'vlan-module', run: checkVlanModule, readsEc2: false },
  { name: 'kubernetes-api', run: checkKubernetesApi, readsEc2: false },
  { name: 'kube-proxy', run: checkKubeProxy, readsEc2: false },
  { name: 'instance-type', run: checkInstanceType, readsEc2: true },
  { name: 'eni-attachments', run: checkEniAttachments, readsEc2: true },
];

/** Every check's name, in the order a report lists them. */
export const DOCTOR_CHECKS: readonly string[] = [
  'configuration',
  'imds',
  'endpoints',
  ...CHECKS.map((c) => c.name),
];

export async function runDoctor(run: DoctorRun): Promise<DoctorReport> {
  const now = run.now ?? Date.now;
  const started = now();
  const found: DoctorFinding[] = [];
  const skipped: DoctorSkip[] = [];
  const config = parseConfig(run.env, found);
  for (const { variable, reason } of unhonouredUpstreamVariables(run.env)) {
    found.push({
      check: 'configuration',
      severity: 'warning',
      subject: variable,
      message: `aws-node's ${variable} is set but means nothing to vpcnet: ${reason}`,
      fix: `unset ${variable} in the agent's environment`,
    });
  }
  const imds = doctorImds(run.env);
  let cloud: DoctorCloud | undefined;
  try {
    cloud = await doctorCloud(run.env, imds);
  } catch (err) {
    found.push({
      check: 'endpoints',
      severity: 'error',
      subject: 'EC2 client',
      message: `the agent could not build its EC2 client: ${errorText(err)}`,
      fix: 'give the agent a region (AWS_REGION, or a reachable IMDS) and credentials (instance profile or IRSA)',
    });
  }
  const base = {
    env: run.env,
    config,
    paths: run.paths,
    imds,
    cloud,
    kube: doctorKube(config),
    found,
    skipped,
  };
  const facts = await nodeIdentity({ ...base, facts: undefined }, run.agentSocket);
  const ctx: DoctorContext = { ...base, facts };
  const ec2Answers = await checkEndpoints(ctx);
  await Promise.all(
    CHECKS.map(async (c) => {
      if (c.readsEc2 && !ec2Answers) return skip(ctx, c.name, 'EC2 does not answer (see endpoints)');
      await c.run(ctx).catch((err: unknown) => skip(ctx, c.name, `the check failed: ${errorText(err)}`));
    }),
  );
  cloud?.clients.transport.close();
  const failed = new Set(found.map((f) => f.check));
  const skippedWhole = new Set(skipped.map((s) => s.check));
  return {
    findings: sortFindings(found),
    passed: DOCTOR_CHECKS.filter((n) => !failed.has(n) && !skippedWhole.has(n)),
    skipped,
    ms: now() - started,
  };
}
