// Test support: an emulator on 127.0.0.1 with a seeded random source, an SDK client pointed at
// it, and a raw form POST for wire-level assertions. Not a test file itself. A test that needs
// time to pass (stale reads, token expiry) passes its own clock as `nowMs` and advances it.
import { EC2Client } from '@aws-sdk/client-ec2';
import type { EmulatorOptions, RunningEmulator, VpcSpec } from '../api.ts';
import { startEmulator } from '../server.ts';
import { seededRandom } from '../vpc/ids.ts';

export const TEST_VPC: VpcSpec = {
  vpcId: 'vpc-0123456789abcdef0',
  cidr: '10.0.0.0/16',
  region: 'us-west-2',
  subnets: [
    { subnetId: 'subnet-aaaaaaaaaaaaaaaaa', cidr: '10.0.0.0/24', availabilityZone: 'us-west-2a' },
    { subnetId: 'subnet-bbbbbbbbbbbbbbbbb', cidr: '10.0.1.0/28', availabilityZone: 'us-west-2a' },
    { subnetId: 'subnet-ccccccccccccccccc', cidr: '10.0.2.0/24', availabilityZone: 'us-west-2b' },
  ],
};
/** TEST_VPC made dual-stack as the lab's `--ipv6` does: a /56, a /64 per subnet but the small one. */
export const TEST_VPC_DUAL_STACK: VpcSpec = {
  ...TEST_VPC,
  ipv6Cidr: '2001:db8:5e00::/56',
  subnets: TEST_VPC.subnets.map((s, i) =>
    i === 1 ? s : { ...s, ipv6Cidr: i === 0 ? '2001:db8:5e00::/64' : `2001:db8:5e00:${i}::/64` },
  ),
};
export const SUBNET_A = 'subnet-aaaaaaaaaaaaaaaaa';
export const SUBNET_SMALL = 'subnet-bbbbbbbbbbbbbbbbb';
export const SUBNET_OTHER_AZ = 'subnet-ccccccccccccccccc';

export interface TestEmulator {
  readonly emulator: RunningEmulator;
  readonly url: string;
  readonly ec2: EC2Client;
  readonly logs: Record<string, unknown>[];
  /**
   * A call of the Kubernetes slice: `body` sent as JSON with `contentType` (default
   * application/json); `json` is the parsed answer, undefined when it has no body.
   */
  kube<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<{ status: number; json: T }>;
  /** POST an EC2 action as a raw form; returns status, headers and body text. */
  post(params: Record<string, string>): Promise<{ status: number; requestId: string | null; body: string }>;
  close(): Promise<void>;
}

export async function startTestEmulator(
  extra: Partial<EmulatorOptions> = {},
  seed = 42,
): Promise<TestEmulator> {
  const logs: Record<string, unknown>[] = [];
  const emulator = await startEmulator({
    vpc: TEST_VPC,
    listen: [{ host: '127.0.0.1', port: 0 }],
    random: seededRandom(seed),
    log: (l) => logs.push(l),
    ...extra,
  });
  const url = emulator.urls[0]!;
  const ec2 = new EC2Client({
    endpoint: url,
    region: 'us-west-2',
    credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    maxAttempts: 1,
  });
  return {
    emulator,
    url,
    ec2,
    logs,
    async kube<T>(method: string, path: string, body?: unknown, contentType = 'application/json') {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { 'content-type': contentType },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, json: (text === '' ? undefined : JSON.parse(text)) as T };
    },
    async post(params) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ Version: '2016-11-15', ...params }).toString(),
      });
      return { status: res.status, requestId: res.headers.get('x-amzn-requestid'), body: await res.text() };
    },
    async close() {
      ec2.destroy();
      await emulator.close();
    },
  };
}
