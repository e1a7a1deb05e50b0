// DryRun and the instance role's policy as EC2 answers them: 412 DryRunOperation with nothing
// changed, 403 UnauthorizedOperation naming the permission (CreateTags too, for a create that tags),
// UnknownParameter where EC2's API has no DryRun; the emulator's list of those agrees with EC2's
// model as the AWS SDK ships it. And STS GetCallerIdentity, IAM SimulatePrincipalPolicy (itself
// subject to the policy), DescribeSecurityGroups, metadata options and a turned-off IMDS.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';
import { INSTANCE_ROLE_ARN, NO_DRY_RUN_ACTIONS } from './authorization.ts';
import { EMULATED_EC2_ACTIONS } from './query-api.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

async function admin(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

async function enis(): Promise<number> {
  const state = JSON.parse((await admin('GET', '/admin/state')).text) as { enis: unknown[] };
  return state.enis.length;
}

const policy = (deny: string[]) => ({
  Version: '2012-10-17',
  Statement: [
    { Effect: 'Allow', Action: ['ec2:*', 'iam:SimulatePrincipalPolicy'], Resource: '*' },
    { Effect: 'Deny', Action: deny, Resource: '*' },
  ],
});

test('a dry run of a permitted call is 412 DryRunOperation in the EC2 error document and changes nothing', async () => {
  await admin('PUT', '/admin/iam-policy', {});
  const before = await enis();
  const r = await t.post({ Action: 'CreateNetworkInterface', SubnetId: SUBNET_A, DryRun: 'true' });
  assert.equal(r.status, 412);
  assert.match(
    r.body,
    /<Response><Errors><Error><Code>DryRunOperation<\/Code><Message>Request would have succeeded, but DryRun flag is set\.<\/Message><\/Error><\/Errors><RequestID>/,
  );
  assert.equal(await enis(), before, 'no ENI was created');
  const calls = (
    JSON.parse((await admin('GET', '/admin/state')).text) as {
      ec2Calls: Record<string, { calls: number; dryRuns?: number }>;
    }
  ).ec2Calls.CreateNetworkInterface;
  assert.deepEqual({ calls: calls?.calls, dryRuns: calls?.dryRuns }, { calls: 0, dryRuns: 1 });
});

test('DryRun on an action whose request has no DryRun is refused as an unknown parameter', async () => {
  for (const action of NO_DRY_RUN_ACTIONS) {
    const r = await t.post({ Action: action, NetworkInterfaceId: 'eni-1', DryRun: 'true' });
    assert.equal(r.status, 400, action);
    assert.match(r.body, /<Code>UnknownParameter<\/Code><Message>The parameter DryRun is not recognized/);
  }
});

test('a denied permission is 403 UnauthorizedOperation naming it, for the dry run and the real call alike', async () => {
  await admin('PUT', '/admin/iam-policy', policy(['ec2:CreateNetworkInterface', 'ec2:Describe*']));
  try {
    for (const dryRun of [{ DryRun: 'true' }, {}]) {
      const r = await t.post({ Action: 'CreateNetworkInterface', SubnetId: SUBNET_A, ...dryRun });
      assert.equal(r.status, 403);
      assert.match(
        r.body,
        /<Code>UnauthorizedOperation<\/Code><Message>You are not authorized to perform this operation\. User: arn:aws:sts::111122223333:assumed-role\/vpcnet-node\/anonymous is not authorized to perform: ec2:CreateNetworkInterface with an explicit deny/,
      );
    }
    assert.equal(
      (await t.post({ Action: 'DescribeSubnets' })).status,
      403,
      'a wildcard denies every Describe',
    );
    assert.equal(
      (await t.post({ Action: 'DetachNetworkInterface', AttachmentId: 'eni-attach-1', DryRun: 'true' }))
        .status,
      412,
    );
    const r = await admin('GET', '/admin/iam-policy');
    assert.match(r.text, /ec2:CreateNetworkInterface/);
  } finally {
    await admin('PUT', '/admin/iam-policy', {});
  }
});

test('a create that tags what it makes needs ec2:CreateTags too', async () => {
  await admin('PUT', '/admin/iam-policy', policy(['ec2:CreateTags']));
  try {
    const tagged = {
      Action: 'CreateNetworkInterface',
      SubnetId: SUBNET_A,
      DryRun: 'true',
      'TagSpecification.1.ResourceType': 'network-interface',
      'TagSpecification.1.Tag.1.Key': 'vpcnet.io/created-by',
      'TagSpecification.1.Tag.1.Value': 'vpcnet',
    };
    const r = await t.post(tagged);
    assert.equal(r.status, 403);
    assert.match(r.body, /not authorized to perform: ec2:CreateTags /);
    const untagged = await t.post({ Action: 'CreateNetworkInterface', SubnetId: SUBNET_A, DryRun: 'true' });
    assert.equal(untagged.status, 412);
  } finally {
    await admin('PUT', '/admin/iam-policy', {});
  }
});

test('without Allow an action is implicitly denied; a malformed policy is refused', async () => {
  await admin('PUT', '/admin/iam-policy', { Statement: [{ Effect: 'Allow', Action: 'ec2:Describe*' }] });
  try {
    assert.match(
      (await t.post({ Action: 'DeleteNetworkInterface', NetworkInterfaceId: 'eni-1', DryRun: 'true' })).body,
      /because no identity-based policy allows the ec2:DeleteNetworkInterface action/,
    );
    assert.equal((await t.post({ Action: 'DescribeSubnets' })).status, 200);
  } finally {
    await admin('PUT', '/admin/iam-policy', {});
  }
  const bad = await admin('PUT', '/admin/iam-policy', { Statement: [{ Effect: 'Maybe', Action: 'ec2:*' }] });
  assert.equal(bad.status, 400);
  assert.match(bad.text, /Effect must be Allow or Deny/);
});

test('which EC2 actions take DryRun agrees with EC2’s API model (the AWS SDK’s request shapes)', async () => {
  const models = fileURLToPath(
    new URL('../../../node_modules/@aws-sdk/client-ec2/dist-types/models/', import.meta.url),
  );
  const text = (
    await Promise.all((await readdir(models)).map((f) => readFile(join(models, f), 'utf8')))
  ).join('\n');
  for (const action of EMULATED_EC2_ACTIONS) {
    const shape = new RegExp(`export interface ${action}Request \\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1];
    assert.ok(shape !== undefined, `EC2's model has ${action}`);
    assert.equal(
      !/\bDryRun\?:/.test(shape),
      NO_DRY_RUN_ACTIONS.has(action),
      `${action}: DryRun in EC2's model`,
    );
  }
});

function iamPost(service: 'sts' | 'iam', params: Record<string, string>) {
  return fetch(t.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `AWS4-HMAC-SHA256 Credential=AKIDNODE/20261201/us-east-1/${service}/aws4_request, SignedHeaders=host, Signature=0`,
    },
    body: new URLSearchParams(params).toString(),
  }).then(async (r) => ({ status: r.status, body: await r.text() }));
}

test('STS names the caller’s role session; IAM simulates the role’s policy, unless it may not', async () => {
  const who = await iamPost('sts', { Action: 'GetCallerIdentity', Version: '2011-06-15' });
  assert.equal(who.status, 200);
  assert.match(who.body, /<Arn>arn:aws:sts::111122223333:assumed-role\/vpcnet-node\/AKIDNODE<\/Arn>/);
  await admin('PUT', '/admin/iam-policy', policy(['ec2:AssignPrivateIpAddresses']));
  try {
    const sim = await iamPost('iam', {
      Action: 'SimulatePrincipalPolicy',
      Version: '2010-05-08',
      PolicySourceArn: INSTANCE_ROLE_ARN,
      'ActionNames.member.1': 'ec2:AssignPrivateIpAddresses',
      'ActionNames.member.2': 'ec2:UnassignPrivateIpAddresses',
    });
    assert.equal(sim.status, 200);
    assert.match(
      sim.body,
      /<EvalActionName>ec2:AssignPrivateIpAddresses<\/EvalActionName><EvalResourceName>\*<\/EvalResourceName><EvalDecision>explicitDeny<\/EvalDecision>/,
    );
    assert.match(
      sim.body,
      /<EvalActionName>ec2:UnassignPrivateIpAddresses<\/EvalActionName><EvalResourceName>\*<\/EvalResourceName><EvalDecision>allowed<\/EvalDecision>/,
    );
    await admin('PUT', '/admin/iam-policy', { Statement: [{ Effect: 'Allow', Action: 'ec2:*' }] });
    const denied = await iamPost('iam', {
      Action: 'SimulatePrincipalPolicy',
      Version: '2010-05-08',
      PolicySourceArn: INSTANCE_ROLE_ARN,
      'ActionNames.member.1': 'ec2:AssignPrivateIpAddresses',
    });
    assert.equal(denied.status, 403);
    assert.match(
      denied.body,
      /<ErrorResponse xmlns="https:\/\/iam\.amazonaws\.com\/doc\/2010-05-08\/"><Error><Type>Sender<\/Type><Code>AccessDenied<\/Code><Message>[^<]*iam:SimulatePrincipalPolicy/,
    );
  } finally {
    await admin('PUT', '/admin/iam-policy', {});
  }
});

test('DescribeSecurityGroups lists the VPC’s groups and fails on an unknown one', async () => {
  assert.equal(
    (await admin('POST', '/admin/security-groups', { groupId: 'sg-0a1b2c3d', groupName: 'pods' })).status,
    201,
  );
  const all = await t.post({ Action: 'DescribeSecurityGroups' });
  assert.match(all.body, /<groupId>sg-00000000000000001<\/groupId><groupName>default<\/groupName>/);
  assert.match(all.body, /<groupId>sg-0a1b2c3d<\/groupId><groupName>pods<\/groupName>/);
  const unknown = await t.post({
    Action: 'DescribeSecurityGroups',
    'GroupId.1': 'sg-0a1b2c3d',
    'GroupId.2': 'sg-0bad0bad',
  });
  assert.equal(unknown.status, 400);
  assert.match(
    unknown.body,
    /<Code>InvalidGroup\.NotFound<\/Code><Message>The security group &#39;sg-0bad0bad&#39; does not exist/,
  );
});

function rawImdsPut(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/latest/api/token`,
      { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } },
      (res) => {
        res.resume();
        resolve(`answered ${res.statusCode}`);
      },
    );
    req.on('error', (err) => resolve(`no answer: ${(err as NodeJS.ErrnoException).code}`));
    req.end();
  });
}

test('metadata options show in DescribeInstances, and an instance whose endpoint is off gets no IMDS answer', async () => {
  const t2 = await startTestEmulator({ imdsFallbackInstance: () => launched });
  let launched: string | undefined;
  try {
    launched = (await t2.emulator.launchInstance({ instanceType: 't3.medium', subnetId: SUBNET_A }))
      .instanceId;
    assert.equal(await rawImdsPut(t2.url), 'answered 200');
    const set = await fetch(`${t2.url}/admin/instances/${launched}/metadata-options`, {
      method: 'POST',
      body: JSON.stringify({ httpEndpoint: 'disabled', httpPutResponseHopLimit: 1 }),
    });
    assert.equal(set.status, 200);
    assert.match(await rawImdsPut(t2.url), /^no answer: ECONNRESET$/);
    const d = await t2.post({ Action: 'DescribeInstances', 'InstanceId.1': launched });
    assert.match(
      d.body,
      /<metadataOptions><state>applied<\/state><httpTokens>required<\/httpTokens><httpPutResponseHopLimit>1<\/httpPutResponseHopLimit><httpEndpoint>disabled<\/httpEndpoint>/,
    );
  } finally {
    await t2.close();
  }
});
