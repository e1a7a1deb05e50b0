// describeInstanceEnis against canned EC2 replies: pages joined by NextToken, and what the
// emulator never sends (ENIs without InterfaceType or TagSet, addresses that are not IPv4).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ImdsClient } from '../imds.ts';
import { CannedEc2, ec2Reply } from '../testing/canned-ec2.ts';
import { AwsCloud } from './aws.ts';

const imds = () => new ImdsClient({ endpoint: 'http://127.0.0.1:9' });

function eniXml(n: number, primaryIp = `10.0.0.${10 + n}`): string {
  return (
    `<item><networkInterfaceId>eni-${n}</networkInterfaceId><subnetId>subnet-0a</subnetId>` +
    `<macAddress>02:00:00:00:00:0${n}</macAddress><privateIpAddress>${primaryIp}</privateIpAddress>` +
    `<attachment><attachmentId>eni-attach-${n}</attachmentId><deviceIndex>${n}</deviceIndex></attachment>` +
    `<privateIpAddressesSet><item><privateIpAddress>${primaryIp}</privateIpAddress><primary>true</primary></item>` +
    '</privateIpAddressesSet></item>'
  );
}

const subnetReply = (cidr: string) =>
  ec2Reply(
    'DescribeSubnets',
    `<subnetSet><item><subnetId>subnet-0a</subnetId><cidrBlock>${cidr}</cidrBlock></item></subnetSet>`,
  );

test('describeInstanceEnis follows NextToken until the last page', async () => {
  const pages: Record<string, string> = {
    first: `<networkInterfaceSet>${eniXml(2)}</networkInterfaceSet><nextToken>p2</nextToken>`,
    p2: `<networkInterfaceSet>${eniXml(0)}</networkInterfaceSet><nextToken>p3</nextToken>`,
    p3: `<networkInterfaceSet>${eniXml(1)}</networkInterfaceSet>`,
  };
  const ec2 = new CannedEc2((action, params) => {
    if (action === 'DescribeSubnets') return subnetReply('10.0.0.0/20');
    const token = typeof params.NextToken === 'string' ? params.NextToken : 'first';
    return ec2Reply(action, pages[token] ?? '<networkInterfaceSet/>');
  });
  const cloud = new AwsCloud({ ec2, imds: imds() });
  const enis = await cloud.describeInstanceEnis('i-0paged');
  const describes = ec2.calls.filter((c) => c.action === 'DescribeNetworkInterfaces');
  assert.deepEqual(
    describes.map((c) => c.params.NextToken),
    [undefined, 'p2', 'p3'],
  );
  assert.deepEqual(describes[0]?.params.Filter, [{ Name: 'attachment.instance-id', Value: ['i-0paged'] }]);
  assert.deepEqual(
    enis.map((e) => [e.eniId, e.deviceNumber, e.subnetCidr, e.interfaceType, e.tags]),
    [
      ['eni-0', 0, '10.0.0.0/20', 'interface', {}],
      ['eni-1', 1, '10.0.0.0/20', 'interface', {}],
      ['eni-2', 2, '10.0.0.0/20', 'interface', {}],
    ],
    'an ENI without InterfaceType or TagSet is a plain interface without tags',
  );
});

test('a subnet CIDR or ENI address in a reply that is not IPv4 is an InvalidResponse naming the field', async () => {
  let subnetCidr = '10.0.0.0';
  let primaryIp = '10.0.0.10';
  const ec2 = new CannedEc2((action) =>
    action === 'DescribeSubnets'
      ? subnetReply(subnetCidr)
      : ec2Reply(action, `<networkInterfaceSet>${eniXml(0, primaryIp)}</networkInterfaceSet>`),
  );
  const cloud = new AwsCloud({ ec2, imds: imds() });
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
});

test('a reply field of the wrong shape is a non-retryable InvalidResponse naming the element', async () => {
  const ec2 = new CannedEc2((action) =>
    ec2Reply(
      action,
      '<instanceTypeSet><item><instanceType>m5.large</instanceType><networkInfo>' +
        '<maximumNetworkInterfaces>three</maximumNetworkInterfaces></networkInfo></item></instanceTypeSet>',
    ),
  );
  const cloud = new AwsCloud({ ec2, imds: imds() });
  await assert.rejects(cloud.instanceTypeLimits('m5.large'), {
    code: 'InvalidResponse',
    retryable: false,
    message:
      /^cannot describe instance type m5\.large: EC2 reply unreadable: .*networkInfo\.maximumNetworkInterfaces is not an integer \(got "three"\)$/,
  });
});

test('createEni sends security groups, description, client token and tags in EC2 query names', async () => {
  const ec2 = new CannedEc2((action) =>
    ec2Reply(
      action,
      '<networkInterface><networkInterfaceId>eni-0new</networkInterfaceId><macAddress>02:00:00:00:00:09</macAddress>' +
        '<privateIpAddress>10.0.0.99</privateIpAddress></networkInterface>',
    ),
  );
  const cloud = new AwsCloud({ ec2, imds: imds() });
  const created = await cloud.createEni(
    'subnet-0a',
    ['sg-1', 'sg-2'],
    'vpcnet ENI',
    { owner: 'i-0a' },
    'tok-1',
  );
  assert.deepEqual(created, { eniId: 'eni-0new', mac: '02:00:00:00:00:09', primaryIp: '10.0.0.99' });
  assert.deepEqual(ec2.calls[0], {
    action: 'CreateNetworkInterface',
    params: {
      SubnetId: 'subnet-0a',
      SecurityGroupId: ['sg-1', 'sg-2'],
      Description: 'vpcnet ENI',
      ClientToken: 'tok-1',
      TagSpecification: [{ ResourceType: 'network-interface', Tag: [{ Key: 'owner', Value: 'i-0a' }] }],
    },
  });
});

test('describeSubnets of a zone asks for the node VPC only, in pages of up to 1000, and follows NextToken through short pages', async () => {
  // A paging EC2 that answers two subnets a page, whatever MaxResults asks: the node's own
  // subnet (the twelfth) is on the last page.
  const subnets = Array.from(
    { length: 12 },
    (_, i) =>
      `<item><subnetId>subnet-${i}</subnetId><vpcId>vpc-0a</vpcId><availabilityZone>us-west-2a</availabilityZone>` +
      `<cidrBlock>10.0.${i}.0/24</cidrBlock><availableIpAddressCount>${200 + i}</availableIpAddressCount></item>`,
  );
  const ec2 = new CannedEc2((action, params) => {
    const at = typeof params.NextToken === 'string' ? Number(params.NextToken) : 0;
    const next = at + 2 < subnets.length ? `<nextToken>${at + 2}</nextToken>` : '';
    return ec2Reply(action, `<subnetSet>${subnets.slice(at, at + 2).join('')}</subnetSet>${next}`);
  });
  const cloud = new AwsCloud({ ec2, imds: imds() });
  const found = await cloud.describeSubnets({ availabilityZone: 'us-west-2a', vpcId: 'vpc-0a' });
  assert.deepEqual(
    found.map((s) => s.subnetId),
    subnets.map((_, i) => `subnet-${i}`),
    'all 12, not the first page',
  );
  assert.equal(found.at(-1)?.availableIpCount, 211);
  assert.deepEqual(
    ec2.calls.map((c) => c.params.NextToken),
    [undefined, '2', '4', '6', '8', '10'],
  );
  assert.deepEqual(ec2.calls[0]?.params, {
    Filter: [
      { Name: 'vpc-id', Value: ['vpc-0a'] },
      { Name: 'availability-zone', Value: ['us-west-2a'] },
    ],
    MaxResults: 1000,
    NextToken: undefined,
  });
});
