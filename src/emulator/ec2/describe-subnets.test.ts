// DescribeSubnets pages as EC2's do (MaxResults within 5-1000, NextToken to the next page), the
// short-pages fault cuts pages below what MaxResults asks, and subnet tags change through
// CreateTags and DeleteTags: through the real @aws-sdk/client-ec2 client and raw forms.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  CreateTagsCommand,
  DeleteTagsCommand,
  DescribeSubnetsCommand,
  paginateDescribeSubnets,
  type Subnet,
} from '@aws-sdk/client-ec2';
import type { VpcSpec } from '../api.ts';
import { startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

// Twelve subnets of one zone, the order DescribeSubnets lists them in.
const SUBNETS = Array.from({ length: 12 }, (_, i) => ({
  subnetId: `subnet-0page${String(i).padStart(12, '0')}`,
  cidr: `10.0.${i * 16}.0/20`,
  availabilityZone: 'us-west-2a',
}));
const VPC: VpcSpec = { vpcId: 'vpc-0pages', cidr: '10.0.0.0/16', region: 'us-west-2', subnets: SUBNETS };

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator({ vpc: VPC });
});
after(() => t.close());

const ids = (subnets: readonly Subnet[] | undefined) => (subnets ?? []).map((s) => s.SubnetId);
const zoneFilter = [{ Name: 'availability-zone', Values: ['us-west-2a'] }];

test('DescribeSubnets with MaxResults answers that many and a NextToken, and the token gives the rest in order', async () => {
  const first = await t.ec2.send(new DescribeSubnetsCommand({ Filters: zoneFilter, MaxResults: 5 }));
  assert.deepEqual(ids(first.Subnets), ids(SUBNETS.slice(0, 5).map((s) => ({ SubnetId: s.subnetId }))));
  assert.ok(first.NextToken);
  const second = await t.ec2.send(
    new DescribeSubnetsCommand({ Filters: zoneFilter, MaxResults: 5, NextToken: first.NextToken }),
  );
  assert.equal(second.Subnets?.[0]?.SubnetId, SUBNETS[5]!.subnetId);
  const all: Subnet[] = [];
  for await (const page of paginateDescribeSubnets({ client: t.ec2, pageSize: 5 }, { Filters: zoneFilter })) {
    all.push(...(page.Subnets ?? []));
  }
  assert.deepEqual(
    ids(all),
    SUBNETS.map((s) => s.subnetId),
    "the SDK's paginator reads every page",
  );
  const whole = await t.ec2.send(new DescribeSubnetsCommand({ Filters: zoneFilter }));
  assert.equal(whole.Subnets?.length, 12, 'without MaxResults every subnet comes at once');
  assert.equal(whole.NextToken, undefined);
});

test('DescribeSubnets refuses a MaxResults outside 5-1000 and a NextToken it did not give, with InvalidParameterValue', async () => {
  for (const max of ['4', '1001']) {
    const r = await t.post({ Action: 'DescribeSubnets', MaxResults: max });
    assert.equal(r.status, 400);
    assert.match(r.body, /<Code>InvalidParameterValue<\/Code>/);
    assert.match(
      r.body,
      new RegExp(
        `Value \\( ${max} \\) for parameter maxResults is invalid. Expecting a value between 5 and 1000.`,
      ),
    );
  }
  const bad = await t.post({ Action: 'DescribeSubnets', MaxResults: '5', NextToken: 'bm90LWEtdG9rZW4' });
  assert.equal(bad.status, 400);
  assert.match(bad.body, /Invalid NextToken/);
});

test('the short-pages fault cuts every DescribeSubnets page, with or without MaxResults, and the NextTokens still lead through all', async () => {
  t.emulator.setFaults({ pageItems: 2, actions: ['DescribeSubnets'] });
  try {
    const bare = await t.ec2.send(new DescribeSubnetsCommand({}));
    assert.equal(bare.Subnets?.length, 2, 'a page of 2 of 12');
    assert.ok(bare.NextToken);
    const asked = await t.ec2.send(new DescribeSubnetsCommand({ MaxResults: 1000 }));
    assert.equal(asked.Subnets?.length, 2);
    let token: string | undefined;
    const seen: string[] = [];
    do {
      const page = await t.ec2.send(new DescribeSubnetsCommand({ MaxResults: 1000, NextToken: token }));
      seen.push(...ids(page.Subnets).map(String));
      token = page.NextToken;
    } while (token !== undefined);
    assert.deepEqual(
      seen,
      SUBNETS.map((s) => s.subnetId),
    );
  } finally {
    t.emulator.setFaults({});
  }
});

test('CreateTags and DeleteTags change what DescribeSubnets shows and filters by; DeleteTags with a value removes only that value', async () => {
  const subnet = SUBNETS[7]!.subnetId;
  await t.ec2.send(
    new CreateTagsCommand({
      Resources: [subnet],
      Tags: [
        { Key: 'kubernetes.io/role/cni', Value: '0' },
        { Key: 'cni.networking.k8s.aws/cluster/blue', Value: 'shared' },
      ],
    }),
  );
  const tagged = await t.ec2.send(
    new DescribeSubnetsCommand({ Filters: [{ Name: 'tag:kubernetes.io/role/cni', Values: ['0'] }] }),
  );
  assert.deepEqual(ids(tagged.Subnets), [subnet]);
  await t.ec2.send(
    new DeleteTagsCommand({ Resources: [subnet], Tags: [{ Key: 'kubernetes.io/role/cni', Value: '1' }] }),
  );
  const [kept] = (await t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: [subnet] }))).Subnets ?? [];
  assert.equal(
    kept?.Tags?.find((x) => x.Key === 'kubernetes.io/role/cni')?.Value,
    '0',
    'a DeleteTags naming another value leaves the tag',
  );
  await t.ec2.send(
    new DeleteTagsCommand({
      Resources: [subnet],
      Tags: [{ Key: 'kubernetes.io/role/cni' }, { Key: 'cni.networking.k8s.aws/cluster/blue' }],
    }),
  );
  const [bare] = (await t.ec2.send(new DescribeSubnetsCommand({ SubnetIds: [subnet] }))).Subnets ?? [];
  assert.deepEqual(bare?.Tags ?? [], []);
});
