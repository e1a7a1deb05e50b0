// describeInstanceEnis against canned EC2 replies served from the SDK's own middleware stack:
// what the emulator does not do (it does not paginate) or never sends (ENIs without InterfaceType).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EC2Client, type ServiceOutputTypes } from '@aws-sdk/client-ec2';
import { AwsCloud } from './aws.ts';
import { ImdsClient } from './imds.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const CREDENTIALS = { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' };

test('describeInstanceEnis follows NextToken until the last page', async () => {
  // Canned EC2 replies served from the SDK's own middleware stack (the emulator does not paginate).
  const ec2 = new EC2Client({
    region: 'us-west-2',
    credentials: CREDENTIALS,
    endpoint: 'http://127.0.0.1:9',
  });
  const eni = (n: number) => ({
    NetworkInterfaceId: `eni-${n}`,
    MacAddress: `02:00:00:00:00:0${n}`,
    SubnetId: 'subnet-0a',
    PrivateIpAddress: `10.0.0.${10 + n}`,
    PrivateIpAddresses: [{ PrivateIpAddress: `10.0.0.${10 + n}`, Primary: true }],
    Attachment: { AttachmentId: `eni-attach-${n}`, DeviceIndex: n },
  });
  const pages: Record<string, { NetworkInterfaces: ReturnType<typeof eni>[]; NextToken?: string }> = {
    first: { NetworkInterfaces: [eni(2)], NextToken: 'p2' },
    p2: { NetworkInterfaces: [eni(0)], NextToken: 'p3' },
    p3: { NetworkInterfaces: [eni(1)] },
  };
  const tokensAsked: (string | undefined)[] = [];
  ec2.middlewareStack.add(
    () =>
      async (args): Promise<{ output: ServiceOutputTypes; response: unknown }> => {
        const input = args.input as { NextToken?: string; SubnetIds?: string[] };
        if (input.SubnetIds !== undefined) {
          return {
            output: { Subnets: [{ SubnetId: 'subnet-0a', CidrBlock: '10.0.0.0/20' }], $metadata: {} },
            response: {},
          };
        }
        tokensAsked.push(input.NextToken);
        const page = pages[input.NextToken ?? 'first'] ?? { NetworkInterfaces: [] };
        return { output: { ...page, $metadata: {} }, response: {} };
      },
    { step: 'initialize', name: 'cannedEc2Replies' },
  );
  const cloud = new AwsCloud({ ec2, imds: new ImdsClient({ endpoint: 'http://127.0.0.1:9' }) });
  try {
    const enis = await cloud.describeInstanceEnis('i-0paged');
    assert.deepEqual(tokensAsked, [undefined, 'p2', 'p3']);
    assert.deepEqual(
      enis.map((e) => [e.eniId, e.deviceNumber, e.subnetCidr, e.interfaceType, e.tags]),
      [
        ['eni-0', 0, '10.0.0.0/20', 'interface', {}],
        ['eni-1', 1, '10.0.0.0/20', 'interface', {}],
        ['eni-2', 2, '10.0.0.0/20', 'interface', {}],
      ],
      'an ENI without InterfaceType or TagSet is a plain interface without tags',
    );
  } finally {
    cloud.close();
  }
});

test('a subnet CIDR or ENI address in a reply that is not IPv4 is an InvalidResponse naming the field', async () => {
  const ec2 = new EC2Client({
    region: 'us-west-2',
    credentials: CREDENTIALS,
    endpoint: 'http://127.0.0.1:9',
  });
  let subnetCidr = '10.0.0.0';
  let primaryIp = '10.0.0.10';
  ec2.middlewareStack.add(
    () =>
      async (args): Promise<{ output: ServiceOutputTypes; response: unknown }> => {
        const input = args.input as { SubnetIds?: string[] };
        const output =
          input.SubnetIds !== undefined
            ? { Subnets: [{ SubnetId: 'subnet-0a', CidrBlock: subnetCidr }] }
            : {
                NetworkInterfaces: [
                  {
                    NetworkInterfaceId: 'eni-0',
                    MacAddress: '02:00:00:00:00:00',
                    SubnetId: 'subnet-0a',
                    PrivateIpAddress: primaryIp,
                    Attachment: { AttachmentId: 'eni-attach-0', DeviceIndex: 0 },
                  },
                ],
              };
        return { output: { ...output, $metadata: {} }, response: {} };
      },
    { step: 'initialize', name: 'cannedEc2Replies' },
  );
  const cloud = new AwsCloud({ ec2, imds: new ImdsClient({ endpoint: 'http://127.0.0.1:9' }) });
  try {
    await assert.rejects(cloud.describeInstanceEnis('i-0bad'), {
      code: 'InvalidResponse',
      message:
        'cannot describe subnet subnet-0a: EC2 reply lacks an IPv4 CIDR in Subnets[subnet-0a].CidrBlock (got "10.0.0.0")',
    });
    subnetCidr = '10.0.0.0/20';
    primaryIp = '10.0.0.1O';
    await assert.rejects(cloud.describeInstanceEnis('i-0bad'), {
      code: 'InvalidResponse',
      message: /an IPv4 address in PrivateIpAddress of eni-0 \(got "10\.0\.0\.1O"\)/,
    });
  } finally {
    cloud.close();
  }
});
