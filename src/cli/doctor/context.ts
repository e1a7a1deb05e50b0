// What every doctor check works from: the node's configuration as its agent would read it (the
// environment), the cloud as the agent reaches it (IMDS, EC2 with the agent's credentials, STS and
// IAM at the same place), the node's own facts, the Kubernetes API when configured, and where the
// node's files are (a node root: `/` on the host, the host's /etc mounted at /host/etc in the
// DaemonSet, a lab node's own directory in a lab). Nothing here changes anything.
import { release } from 'node:os';
import { join } from 'node:path';
import { AwsCloud } from '../../cloud/aws.ts';
import { type AwsClients, createAwsClients } from '../../cloud/create-aws-cloud.ts';
import { Ec2QueryClient } from '../../cloud/ec2-query/ec2-query-client.ts';
import { regionalEndpoint } from '../../cloud/ec2-query/regional-endpoint.ts';
import { ImdsClient, imdsEndpointFromEnv } from '../../cloud/imds.ts';
import { type AgentConfig, agentConfigFromEnv } from '../../config/agent-config.ts';
import { errorText } from '../../infra/error-text.ts';
import { KubeClient } from '../../pods/kube-client.ts';
import type { NodeFacts } from './ec2-actions.ts';
import type { DoctorFinding, DoctorSkip } from './finding.ts';

export interface DoctorPaths {
  /** The node's root: its /etc (kubelet, NetworkManager, systemd-networkd) is read under it. */
  readonly nodeRoot: string;
  /** /proc/sys of the node's network namespace (rp_filter). */
  readonly procSys: string;
  /** sysfs of the node (its network links, loaded kernel modules). */
  readonly sys: string;
  /** The kernel's module tree (/lib/modules). */
  readonly modules: string;
  readonly kernelRelease: string;
}

export const DEFAULT_PATHS: DoctorPaths = {
  nodeRoot: '/',
  procSys: '/proc/sys',
  sys: '/sys',
  modules: '/lib/modules',
  kernelRelease: release(),
};

export interface DoctorCloud {
  readonly clients: AwsClients;
  /** Typed reads through the agent's own driver. */
  readonly aws: AwsCloud;
  readonly sts: Ec2QueryClient;
  readonly iam: Ec2QueryClient;
  readonly stsEndpoint: URL;
}

export interface DoctorContext {
  readonly env: NodeJS.ProcessEnv;
  /** Undefined when the configuration does not parse (a finding says why). */
  readonly config: AgentConfig | undefined;
  readonly paths: DoctorPaths;
  readonly imds: ImdsClient;
  /** Undefined when the clients cannot be built (a finding says why). */
  readonly cloud: DoctorCloud | undefined;
  /** Undefined when neither IMDS nor the agent tells which instance this is. */
  readonly facts: NodeFacts | undefined;
  readonly kube: KubeClient | undefined;
  /** Where checks put what they find. */
  readonly found: DoctorFinding[];
  readonly skipped: DoctorSkip[];
}

/** A finding, added; its fix is one line. */
export function report(ctx: DoctorContext, f: DoctorFinding): void {
  ctx.found.push(f);
}

export function skip(ctx: DoctorContext, check: string, reason: string): void {
  ctx.skipped.push({ check, reason });
}

/** IMDS as the doctor asks it: quick to give up (a node without it should not take minutes). */
export function doctorImds(env: NodeJS.ProcessEnv): ImdsClient {
  return new ImdsClient({ endpoint: imdsEndpointFromEnv(env), timeoutMs: 2000, attempts: 2, backoffMs: 100 });
}

export function parseConfig(env: NodeJS.ProcessEnv, found: DoctorFinding[]): AgentConfig | undefined {
  try {
    return agentConfigFromEnv(env);
  } catch (err) {
    const message = errorText(err);
    const variable = /\b([A-Z][A-Z0-9_]*[A-Z0-9])\b/.exec(message)?.[1] ?? 'the environment';
    found.push({
      check: 'configuration',
      severity: 'error',
      subject: variable,
      message: `the agent would refuse to start: ${message}`,
      fix: `correct ${variable} in the agent's environment (the vpcnet-config ConfigMap), or unset it`,
    });
    return undefined;
  }
}

function endpointOf(env: NodeJS.ProcessEnv, variable: string, fallback: URL): URL {
  const given = env[variable]?.trim();
  return given !== undefined && given !== '' && URL.canParse(given) ? new URL(given) : fallback;
}

/** The clients the agent would build, and STS and IAM beside them with the same credentials. */
export async function doctorCloud(env: NodeJS.ProcessEnv, imds: ImdsClient): Promise<DoctorCloud> {
  const clients = await createAwsClients({ env, imds, requestTimeoutMs: 4000, connectTimeoutMs: 2000 });
  const stsEndpoint = endpointOf(env, 'AWS_ENDPOINT_URL_STS', regionalEndpoint('sts', clients.region));
  const iamEndpoint = endpointOf(env, 'AWS_ENDPOINT_URL_IAM', new URL('https://iam.amazonaws.com/'));
  const common = { credentials: clients.credentials, transport: clients.transport };
  return {
    clients,
    aws: new AwsCloud({ ec2: clients.ec2, imds: clients.imds }),
    sts: new Ec2QueryClient({
      ...common,
      endpoint: stsEndpoint,
      region: clients.region,
      service: { signingName: 'sts', apiVersion: '2011-06-15' },
    }),
    // IAM is global: signed for us-east-1.
    iam: new Ec2QueryClient({
      ...common,
      endpoint: iamEndpoint,
      region: 'us-east-1',
      service: { signingName: 'iam', apiVersion: '2010-05-08' },
    }),
    stsEndpoint,
  };
}

export function doctorKube(config: AgentConfig | undefined): KubeClient | undefined {
  return config?.kubeApi === undefined ? undefined : new KubeClient(config.kubeApi, { timeoutMs: 3000 });
}

/** A path under the node root. */
export function onNode(ctx: DoctorContext, path: string): string {
  return join(ctx.paths.nodeRoot, path);
}
