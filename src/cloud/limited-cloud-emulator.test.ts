// LimitedCloud over the real AWS driver against the emulator with its faults on: the retries
// carry the calls through throttling and internal errors, the figures count what EC2 answered,
// and a CreateNetworkInterface whose reply is lost creates one ENI, not two.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LaunchedInstance, RunningEmulator, VpcSpec } from '../emulator/api.ts';
import { startEmulator } from '../emulator/server.ts';
import { seededRandom } from '../emulator/vpc/ids.ts';
import { silentLogger } from '../infra/log.ts';
import type { AwsCloud } from './aws/aws.ts';
import { createAwsCloud } from './aws/create-aws-cloud.ts';
import { type Cloud, CloudError, type CreatedEni } from './cloud.ts';
import { LimitedCloud } from './limited-cloud.ts';

const VPC: VpcSpec = {
  vpcId: 'vpc-0limit',
  cidr: '10.0.0.0/16',
  region: 'us-west-2',
  subnets: [{ subnetId: 'subnet-0a', cidr: '10.0.0.0/20', availabilityZone: 'us-west-2a' }],
};

describe('LimitedCloud against the emulator with faults', () => {
  let emu: RunningEmulator;
  let node: LaunchedInstance;
  let aws: AwsCloud;
  const answers: { action: unknown; code: unknown; params: unknown }[] = [];

  const limited = (inner: Cloud = aws) =>
    new LimitedCloud({
      inner,
      limit: { qps: 200, burst: 50, maxAttempts: 10 },
      log: silentLogger,
      random: seededRandom(5),
      // Short backoffs and a high floor: the test is about counts, not about waiting (random
      // throttling at 30% would otherwise halve the lanes down to a call a minute).
      retry: { baseDelayMs: 2, maxDelayMs: 20 },
      tuning: { floor: 100 },
      releaseHoldMs: 0,
    });

  before(async () => {
    emu = await startEmulator({
      vpc: VPC,
      listen: [{ host: '127.0.0.1', port: 0 }],
      imdsFallbackInstance: () => node?.instanceId,
      random: seededRandom(873),
      log: (line) => {
        if (line.msg === 'ec2') answers.push({ action: line.action, code: line.code, params: line.params });
      },
    });
    node = await emu.launchInstance({ instanceType: 'm5.large', subnetId: 'subnet-0a' });
    aws = await createAwsCloud({
      region: VPC.region,
      ec2Endpoint: emu.urls[0]!,
      imds: { endpoint: emu.urls[0]! },
      credentials: { accessKeyId: 'AKIDEMULATOR', secretAccessKey: 'emulator' },
    });
  });

  after(async () => {
    aws?.close();
    await emu?.close();
  });

  test('under 30% throttling and 20% internal errors every call succeeds, and the figures match what EC2 answered', async () => {
    const cloud = limited();
    const first = answers.length;
    emu.setFaults({ throttleRate: 0.3, errorRate: 0.2 });
    const assigned: string[] = [];
    try {
      for (let i = 0; i < 8; i++) assigned.push(...(await cloud.assignPrivateIps(node.primaryEni.eniId, 1)));
      const enis = await cloud.describeInstanceEnis(node.instanceId);
      assert.deepEqual([...(enis[0]?.secondaryIps ?? [])].sort(), [...assigned].sort());
    } finally {
      emu.setFaults({});
    }
    assert.equal(new Set(assigned).size, 8);
    const seen = answers.slice(first);
    const count = (code: string) => seen.filter((a) => a.code === code).length;
    assert.ok(count('RequestLimitExceeded') > 0 && count('InternalError') > 0, 'both faults were injected');
    const f = cloud.figures();
    assert.equal(f.throttled, count('RequestLimitExceeded'));
    assert.equal(f.errors, count('InternalError'));
    // One Cloud attempt may be several EC2 requests (describeInstanceEnis also asks for the
    // subnet): attempts are compared for the action that is one request per attempt.
    const assigns = seen.filter((a) => a.action === 'AssignPrivateIpAddresses');
    assert.equal(f.byAction.AssignPrivateIpAddresses?.attempts, assigns.length);
    assert.equal(f.retries, f.throttled + f.errors);
    assert.equal(f.failures, 0);
    assert.equal(f.byAction.AssignPrivateIpAddresses?.calls, 8);
    await cloud.unassignPrivateIps(node.primaryEni.eniId, assigned);
  });

  test('a CreateNetworkInterface whose reply is lost is retried with its ClientToken: one ENI, not two', async () => {
    // The first reply is "lost": EC2 created the ENI, the caller sees a connection reset.
    let lost = false;
    const losesFirstReply = new Proxy(aws, {
      get(target, prop, receiver) {
        if (prop !== 'createEni') return Reflect.get(target, prop, receiver);
        return async (...args: Parameters<AwsCloud['createEni']>): Promise<CreatedEni> => {
          const created = await target.createEni(...args);
          if (lost) return created;
          lost = true;
          throw new CloudError('cannot create ENI: ECONNRESET: socket hang up', 'ECONNRESET', true);
        };
      },
    });
    const cloud = limited(losesFirstReply);
    const before = await aws.describeDetachedEnis('vpcnet/test', 'lost-reply');
    assert.equal(before.length, 0);
    const created = await cloud.createEni('subnet-0a', [], 'lost reply', { 'vpcnet/test': 'lost-reply' });
    const after = await aws.describeDetachedEnis('vpcnet/test', 'lost-reply');
    assert.deepEqual(
      after.map((e) => e.eniId),
      [created.eniId],
    );
    assert.equal(cloud.figures().byAction.CreateNetworkInterface?.retries, 1);
    await aws.deleteEni(created.eniId);
  });
});
