// The production Cloud: EC2 through @aws-sdk/client-ec2, instance facts through IMDSv2.
// The emulator speaks the same wire protocols, so only endpoints differ between the two.
import {
  type _InstanceType,
  AssignPrivateIpAddressesCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  DeleteNetworkInterfaceCommand,
  DescribeInstanceTypesCommand,
  DescribeNetworkInterfacesCommand,
  DescribeSubnetsCommand,
  DetachNetworkInterfaceCommand,
  EC2Client,
  type EC2ClientConfig,
  type Filter,
  ModifyNetworkInterfaceAttributeCommand,
  type NetworkInterface,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import { isCidr, isIpv4 } from '../infra/ipv4.ts';
import { toDetachedEni, toEniInfo } from './aws-network-interface.ts';
import type {
  Cloud,
  CreatedEni,
  DetachedEni,
  EniInfo,
  InstanceMetadata,
  InstanceTypeLimits,
} from './cloud.ts';
import { CloudError } from './cloud.ts';
import { invalidResponse, toCloudError } from './ec2-errors.ts';
import { ImdsClient, type ImdsClientOptions, imdsEndpointFromEnv } from './imds.ts';
import { readInstanceMetadata } from './instance-metadata.ts';

export interface AwsCloudDeps {
  readonly ec2: EC2Client;
  readonly imds: ImdsClient;
}

export class AwsCloud implements Cloud {
  private readonly ec2: EC2Client;
  private readonly imds: ImdsClient;
  /** Instance type limits and subnet CIDRs never change: asked once, failures not cached. */
  private readonly limitsCache = new Map<string, Promise<InstanceTypeLimits>>();
  private readonly subnetCidrCache = new Map<string, Promise<string>>();

  constructor(deps: AwsCloudDeps) {
    this.ec2 = deps.ec2;
    this.imds = deps.imds;
  }

  metadata(): Promise<InstanceMetadata> {
    return readInstanceMetadata(this.imds);
  }

  async describeInstanceEnis(instanceId: string): Promise<EniInfo[]> {
    const doing = `describe ENIs of ${instanceId}`;
    const found = await this.describeEnis(doing, [{ Name: 'attachment.instance-id', Values: [instanceId] }]);
    const enis = await Promise.all(found.map((eni) => toEniInfo(doing, eni, (id) => this.subnetCidr(id))));
    return enis.sort((a, b) => a.deviceNumber - b.deviceNumber);
  }

  async describeDetachedEnis(tagKey: string, tagValue: string): Promise<DetachedEni[]> {
    const doing = `describe detached ENIs tagged ${tagKey}=${tagValue}`;
    const found = await this.describeEnis(doing, [
      { Name: 'status', Values: ['available'] },
      { Name: `tag:${tagKey}`, Values: [tagValue] },
    ]);
    return found.map((eni) => toDetachedEni(doing, eni));
  }

  /** Every page of one DescribeNetworkInterfaces query. */
  private async describeEnis(doing: string, filters: Filter[]): Promise<NetworkInterface[]> {
    const found: NetworkInterface[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.call(doing, () =>
        this.ec2.send(
          new DescribeNetworkInterfacesCommand({
            Filters: filters,
            ...(nextToken !== undefined ? { NextToken: nextToken } : {}),
          }),
        ),
      );
      found.push(...(page.NetworkInterfaces ?? []));
      nextToken = page.NextToken !== undefined && page.NextToken !== '' ? page.NextToken : undefined;
    } while (nextToken !== undefined);
    return found;
  }

  instanceTypeLimits(instanceType: string): Promise<InstanceTypeLimits> {
    return cached(this.limitsCache, instanceType, () => this.fetchLimits(instanceType));
  }

  async assignPrivateIps(eniId: string, count: number): Promise<string[]> {
    const doing = `assign ${count} private IPs to ENI ${eniId}`;
    if (!Number.isInteger(count) || count < 1) {
      throw new CloudError(
        `cannot ${doing}: count must be a positive integer`,
        'InvalidParameterValue',
        false,
      );
    }
    const reply = await this.call(doing, () =>
      this.ec2.send(
        new AssignPrivateIpAddressesCommand({
          NetworkInterfaceId: eniId,
          SecondaryPrivateIpAddressCount: count,
        }),
      ),
    );
    const ips = (reply.AssignedPrivateIpAddresses ?? []).map((a) => a.PrivateIpAddress);
    if (ips.length !== count || ips.some((ip) => ip === undefined || !isIpv4(ip))) {
      throw invalidResponse(doing, `${count} IPv4 AssignedPrivateIpAddresses (got ${JSON.stringify(ips)})`);
    }
    return ips as string[];
  }

  async unassignPrivateIps(eniId: string, ips: readonly string[]): Promise<void> {
    if (ips.length === 0) return;
    const shown = ips.length <= 4 ? ips.join(', ') : `${ips.slice(0, 4).join(', ')}, …`;
    await this.call(`unassign ${ips.length} private IPs (${shown}) from ENI ${eniId}`, () =>
      this.ec2.send(
        new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [...ips] }),
      ),
    );
  }

  async createEni(
    subnetId: string,
    securityGroupIds: readonly string[],
    description: string,
    tags?: Readonly<Record<string, string>>,
    clientToken?: string,
  ): Promise<CreatedEni> {
    const doing = `create ENI in ${subnetId} with security groups ${securityGroupIds.join(',') || '(none)'}`;
    const tagList = Object.entries(tags ?? {}).map(([Key, Value]) => ({ Key, Value }));
    // ClientToken is EC2's idempotency token. Without one from the caller the SDK fills one in
    // per call (its own retries reuse it); a caller that retries itself (LimitedCloud) passes the
    // same token on every attempt, so a lost reply cannot leave a second ENI behind.
    const reply = await this.call(doing, () =>
      this.ec2.send(
        new CreateNetworkInterfaceCommand({
          SubnetId: subnetId,
          Groups: [...securityGroupIds],
          Description: description,
          ...(clientToken !== undefined ? { ClientToken: clientToken } : {}),
          ...(tagList.length > 0
            ? { TagSpecifications: [{ ResourceType: 'network-interface', Tags: tagList }] }
            : {}),
        }),
      ),
    );
    const eni = reply.NetworkInterface;
    if (eni?.NetworkInterfaceId === undefined)
      throw invalidResponse(doing, 'NetworkInterface.NetworkInterfaceId');
    if (eni.MacAddress === undefined) throw invalidResponse(doing, `MacAddress of ${eni.NetworkInterfaceId}`);
    if (eni.PrivateIpAddress === undefined || !isIpv4(eni.PrivateIpAddress)) {
      throw invalidResponse(doing, `an IPv4 PrivateIpAddress of ${eni.NetworkInterfaceId}`);
    }
    return { eniId: eni.NetworkInterfaceId, mac: eni.MacAddress, primaryIp: eni.PrivateIpAddress };
  }

  async attachEni(eniId: string, instanceId: string, deviceIndex: number): Promise<string> {
    const doing = `attach ENI ${eniId} to ${instanceId} at device index ${deviceIndex}`;
    const reply = await this.call(doing, () =>
      this.ec2.send(
        new AttachNetworkInterfaceCommand({
          NetworkInterfaceId: eniId,
          InstanceId: instanceId,
          DeviceIndex: deviceIndex,
        }),
      ),
    );
    if (reply.AttachmentId === undefined) throw invalidResponse(doing, 'AttachmentId');
    return reply.AttachmentId;
  }

  async setDeleteOnTermination(eniId: string, attachmentId: string): Promise<void> {
    await this.call(`set DeleteOnTermination on ENI ${eniId} (attachment ${attachmentId})`, () =>
      this.ec2.send(
        new ModifyNetworkInterfaceAttributeCommand({
          NetworkInterfaceId: eniId,
          Attachment: { AttachmentId: attachmentId, DeleteOnTermination: true },
        }),
      ),
    );
  }

  async detachEni(attachmentId: string): Promise<void> {
    await this.call(`detach ENI attachment ${attachmentId}`, () =>
      this.ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attachmentId })),
    );
  }

  async deleteEni(eniId: string): Promise<void> {
    await this.call(`delete ENI ${eniId}`, () =>
      this.ec2.send(new DeleteNetworkInterfaceCommand({ NetworkInterfaceId: eniId })),
    );
  }

  /** Releases the EC2 client's sockets. */
  close(): void {
    this.ec2.destroy();
  }

  private async fetchLimits(instanceType: string): Promise<InstanceTypeLimits> {
    const doing = `describe instance type ${instanceType}`;
    const reply = await this.call(doing, () =>
      this.ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: [instanceType as _InstanceType] })),
    );
    const info = reply.InstanceTypes?.find((t) => t.InstanceType === instanceType);
    if (info === undefined) {
      throw new CloudError(`cannot ${doing}: EC2 does not know it`, 'InvalidInstanceType', false);
    }
    const maxEnis = info.NetworkInfo?.MaximumNetworkInterfaces;
    const ipsPerEni = info.NetworkInfo?.Ipv4AddressesPerInterface;
    if (maxEnis === undefined) throw invalidResponse(doing, 'NetworkInfo.MaximumNetworkInterfaces');
    if (ipsPerEni === undefined) throw invalidResponse(doing, 'NetworkInfo.Ipv4AddressesPerInterface');
    return { maxEnis, ipsPerEni };
  }

  private subnetCidr(subnetId: string): Promise<string> {
    return cached(this.subnetCidrCache, subnetId, async () => {
      const doing = `describe subnet ${subnetId}`;
      const reply = await this.call(doing, () =>
        this.ec2.send(new DescribeSubnetsCommand({ SubnetIds: [subnetId] })),
      );
      const cidr = reply.Subnets?.find((s) => s.SubnetId === subnetId)?.CidrBlock;
      if (cidr === undefined || !isCidr(cidr)) {
        throw invalidResponse(
          doing,
          `an IPv4 CIDR in Subnets[${subnetId}].CidrBlock (got ${JSON.stringify(cidr)})`,
        );
      }
      return cidr;
    });
  }

  /** Sends one command; every SDK failure leaves as a CloudError saying what we were doing. */
  private async call<Out>(doing: string, send: () => Promise<Out>): Promise<Out> {
    try {
      return await send();
    } catch (err) {
      throw toCloudError(doing, err);
    }
  }
}

function cached<V>(cache: Map<string, Promise<V>>, key: string, load: () => Promise<V>): Promise<V> {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const loading = load();
  cache.set(key, loading);
  loading.catch(() => cache.delete(key));
  return loading;
}

export interface AwsCloudOptions {
  /** Default: AWS_REGION, else the instance's region from IMDS. */
  readonly region?: string;
  /** EC2 endpoint; default AWS_ENDPOINT_URL_EC2 of `env`, else the SDK's choice (the regional endpoint). */
  readonly ec2Endpoint?: string;
  /**
   * SDK attempts per EC2 call, first included (standard retry mode, which backs off on
   * throttling). 1 when a LimitedCloud wraps this one, as in vpcnetd: that layer retries, and
   * every retry must take a token from the agent's rate limit; SDK retries would bypass the
   * limit and multiply the attempts (SDK attempts × LimitedCloud attempts).
   */
  readonly maxAttempts?: number;
  /** Timeout of one EC2 HTTP request, ms. */
  readonly requestTimeoutMs?: number;
  /** Default: the SDK's provider chain (env, profile, instance role). */
  readonly credentials?: EC2ClientConfig['credentials'];
  readonly imds?: ImdsClient | ImdsClientOptions;
  /** Where AWS_REGION, AWS_ENDPOINT_URL_EC2 and AWS_EC2_METADATA_SERVICE_ENDPOINT are read; default process.env. */
  readonly env?: NodeJS.ProcessEnv;
}

export const DEFAULT_EC2_MAX_ATTEMPTS = 3;

/**
 * Builds the EC2 client and the IMDS client. Attempts stay few so that callers (the warm pool,
 * an ADD waiting for an address) see a failure in bounded time and decide themselves.
 */
export async function createAwsCloud(options: AwsCloudOptions = {}): Promise<AwsCloud> {
  const env = options.env ?? process.env;
  const imds =
    options.imds instanceof ImdsClient
      ? options.imds
      : new ImdsClient({ endpoint: imdsEndpointFromEnv(env), ...options.imds });
  const region = options.region ?? nonEmpty(env.AWS_REGION) ?? (await imds.get('placement/region')).trim();
  const endpoint = options.ec2Endpoint ?? nonEmpty(env.AWS_ENDPOINT_URL_EC2);
  const ec2 = new EC2Client({
    region,
    maxAttempts: options.maxAttempts ?? DEFAULT_EC2_MAX_ATTEMPTS,
    retryMode: 'standard',
    requestHandler: { requestTimeout: options.requestTimeoutMs ?? 10_000, connectionTimeout: 3_000 },
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
  });
  return new AwsCloud({ ec2, imds });
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
