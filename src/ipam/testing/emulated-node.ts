// Test support: one node of an in-process emulator, reached through the real AWS driver (the
// SDK over HTTP, IMDSv2), plus the emulator's unfaulted view of the VPC for assertions. Every
// emulator import of ipam's tests is here, so a move of emulator files touches one place.

import type { AwsCloud } from '../../cloud/aws.ts';
import { createAwsCloud } from '../../cloud/create-aws-cloud.ts';
import type {
  FaultSettings,
  LaunchedInstance,
  LaunchInstanceRequest,
  RunningEmulator,
  SubnetSpec,
  VpcSpec,
} from '../../emulator/api.ts';
import { startEmulator } from '../../emulator/server.ts';
import { seededRandom } from '../../emulator/vpc/ids.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const VPC: VpcSpec = {
  vpcId: 'vpc-0ipam',
  cidr: '10.1.0.0/16',
  region: 'us-west-2',
  subnets: [{ subnetId: 'subnet-0ipam', cidr: '10.1.0.0/22', availabilityZone: 'us-west-2a' }],
};

/** An ENI as the emulator's admin state shows it (the truth, never stale, never faulted). */
export interface TrueEni {
  readonly eniId: string;
  readonly secondaryIps: readonly string[];
  readonly tags: Readonly<Record<string, string>>;
  readonly attachment: { readonly instanceId: string; readonly deviceIndex: number } | null;
  /** The ENI's connection-tracking timeouts; null: none set (EC2's defaults). */
  readonly connectionTracking: Readonly<Record<string, number>> | null;
}

export interface EmulatedNode {
  readonly instance: LaunchedInstance;
  /** The production driver, one attempt per call: every injected fault reaches the caller. */
  readonly cloud: AwsCloud;
  /** The emulator's base URL (EC2 and IMDS). */
  readonly url: string;
  setFaults(f: FaultSettings): void;
  /** Every ENI of the VPC, as the emulator holds it now. */
  truth(): Promise<TrueEni[]>;
  /** A subnet's free /28s and free addresses, as the emulator knows them (a census's ground truth). */
  capacity(subnetId: string): Promise<{ freePrefixes: string[]; freeAddresses: number }>;
  /** A call of the emulator's admin API (JSON both ways); rejects on an error status. */
  admin(method: string, path: string, body?: unknown): Promise<unknown>;
  close(): Promise<void>;
}

export async function startEmulatedNode(options: {
  instanceType: string;
  seed: number;
  /** The emulator's clock (stale-read history, IMDS tokens); Date.now when absent. */
  nowMs?: () => number;
  /**
   * More subnets of the VPC (inside 10.1.0.0/16, past 10.1.4.0), listed by DescribeSubnets before
   * the node's own subnet-0ipam when `beforeNodeSubnet`, after it otherwise.
   */
  moreSubnets?: readonly SubnetSpec[];
  beforeNodeSubnet?: boolean;
  /** The primary ENI's connection-tracking timeouts (the instance's launch template). */
  connectionTracking?: LaunchInstanceRequest['connectionTracking'];
  /** The node's subnet-0ipam otherwise than 10.1.0.0/22 untouched: another CIDR, a seeded past. */
  nodeSubnet?: Pick<SubnetSpec, 'cidr' | 'preFragmentation'>;
}): Promise<EmulatedNode> {
  let instanceId: string | undefined;
  const more = options.moreSubnets ?? [];
  const own = VPC.subnets.map((s) => ({ ...s, ...options.nodeSubnet }));
  const vpc: VpcSpec = {
    ...VPC,
    subnets: options.beforeNodeSubnet === true ? [...more, ...own] : [...own, ...more],
  };
  const emulator: RunningEmulator = await startEmulator({
    vpc,
    listen: [{ host: '127.0.0.1', port: 0 }],
    imdsFallbackInstance: () => instanceId,
    random: seededRandom(options.seed),
    ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs }),
  });
  const url = emulator.urls[0]!;
  try {
    const instance = await emulator.launchInstance({
      instanceType: options.instanceType,
      subnetId: 'subnet-0ipam',
      securityGroupIds: ['sg-0ipam'],
      ...(options.connectionTracking === undefined ? {} : { connectionTracking: options.connectionTracking }),
    });
    instanceId = instance.instanceId;
    const cloud = await createAwsCloud({
      region: VPC.region,
      ec2Endpoint: url,
      imds: { endpoint: url },
      credentials: { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' },
    });
    return {
      instance,
      cloud,
      url,
      setFaults: (f) => emulator.setFaults(f),
      truth: async () => parseEnis(await (await fetch(`${url}/admin/state`)).json()),
      capacity: async (subnetId) =>
        (await adminCall(url, 'GET', `/admin/subnets/${subnetId}/capacity`)) as {
          freePrefixes: string[];
          freeAddresses: number;
        },
      admin: (method, path, body) => adminCall(url, method, path, body),
      async close() {
        cloud.close();
        await emulator.close();
      },
    };
  } catch (err) {
    await emulator.close();
    throw err;
  }
}

async function adminCall(url: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

function parseEnis(state: unknown): TrueEni[] {
  const enis = (state as { enis?: unknown }).enis;
  if (!Array.isArray(enis)) throw new Error('admin state has no enis array');
  return enis.map((raw: unknown): TrueEni => {
    const e = raw as Record<string, unknown>;
    const eniAttachment = e.attachment as { instanceId?: unknown; deviceIndex?: unknown } | null;
    if (typeof e.eniId !== 'string' || !Array.isArray(e.secondaryIps))
      throw new Error(`admin state: malformed ENI ${JSON.stringify(raw)}`);
    return {
      eniId: e.eniId,
      secondaryIps: e.secondaryIps.map(String),
      tags: (e.tags ?? {}) as Record<string, string>,
      connectionTracking: (e.connectionTracking ?? null) as Record<string, number> | null,
      attachment:
        eniAttachment === null || eniAttachment === undefined
          ? null
          : { instanceId: String(eniAttachment.instanceId), deviceIndex: Number(eniAttachment.deviceIndex) },
    };
  });
}
