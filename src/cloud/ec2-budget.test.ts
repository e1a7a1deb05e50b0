import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../infra/log.ts';
import { CloudError } from './cloud.ts';
import { Ec2Budget } from './ec2-budget.ts';
import { asEc2Class, ec2CallClass } from './ec2-call-class.ts';
import { LimitedCloud } from './limited-cloud.ts';
import { ScriptedCloud } from './testing/scripted-cloud.ts';
import { VirtualClock } from './testing/virtual-clock.ts';

const budget = (clock: VirtualClock, qps = 1, burst = 1) =>
  new Ec2Budget({ ceiling: { qps, burst }, clock, random: () => 0.5 });

test('calls are classed by their caller, else by their action; a release stays a release', async () => {
  assert.equal(ec2CallClass('DescribeSubnets'), 'read');
  assert.equal(ec2CallClass('AssignPrivateIpAddresses'), 'grow');
  assert.equal(ec2CallClass('DeleteNetworkInterface'), 'release');
  await asEc2Class('demand', async () => {
    assert.equal(ec2CallClass('AssignPrivateIpAddresses'), 'demand');
    assert.equal(ec2CallClass('DescribeSubnets'), 'demand');
    assert.equal(ec2CallClass('UnassignPrivateIpAddresses'), 'release');
  });
});

test('waiting calls go most urgent first: an ADD before warm top-ups, describes and sweeps', async () => {
  const clock = new VirtualClock();
  const b = budget(clock);
  const order: string[] = [];
  const take = (action: string, cls: Parameters<Ec2Budget['acquire']>[1]) =>
    b.acquire(action, cls).then(() => order.push(`${cls} ${action}`));
  await b.acquire('DescribeSubnets', 'read'); // the one token of the ceiling
  const all = Promise.all([
    take('DescribeNetworkInterfaces', 'sweep'),
    take('DescribeNetworkInterfaces', 'read'),
    take('AssignPrivateIpAddresses', 'grow'),
    take('AssignPrivateIpAddresses', 'demand'),
  ]);
  assert.equal(b.waiting()?.cls, 'demand', 'the state names the most urgent waiting call');
  assert.equal(b.waiting()?.action, 'AssignPrivateIpAddresses');
  assert.equal(b.waiting()?.readyInMs, 1000);
  await clock.run(all);
  assert.deepEqual(order, [
    'demand AssignPrivateIpAddresses',
    'grow AssignPrivateIpAddresses',
    'read DescribeNetworkInterfaces',
    'sweep DescribeNetworkInterfaces',
  ]);
  assert.equal(b.waiting(), undefined);
});

test('a lane cut by EC2 does not slow the other actions', async () => {
  const clock = new VirtualClock();
  const b = budget(clock, 10, 10);
  const sentAt = clock.now();
  await b.acquire('AttachNetworkInterface', 'grow');
  b.answered('AttachNetworkInterface', sentAt, true);
  b.answered('AttachNetworkInterface', sentAt, true); // sent before the cut: one cut per round
  assert.equal(b.lanes().AttachNetworkInterface?.rate, 5);
  assert.equal(b.lanes().AttachNetworkInterface?.cuts, 1);
  const started = clock.now();
  await clock.run(b.acquire('DescribeSubnets', 'read'));
  assert.equal(clock.now(), started, 'another lane: at once');
  await clock.run(b.acquire('AttachNetworkInterface', 'grow'));
  assert.equal(clock.now() - started, 300, 'the cut lane pauses 1.5 of its new intervals (random 0.5)');
});

test('a cut lane climbs back by a step per answer, and by itself once EC2 stops throttling', () => {
  const clock = new VirtualClock();
  const b = budget(clock, 8, 8);
  b.answered('CreateNetworkInterface', clock.now(), true);
  assert.equal(b.lanes().CreateNetworkInterface?.rate, 4);
  for (let i = 0; i < 10; i++) b.answered('CreateNetworkInterface', clock.now(), false);
  assert.equal(
    b.lanes().CreateNetworkInterface?.rate.toFixed(6),
    '6.000000',
    'ten steps of 5% of the rate at the cut',
  );
  clock.pass(30_000);
  assert.equal(b.lanes().CreateNetworkInterface?.rate.toFixed(6), '6.000000', 'no climb in the first 30 s');
  clock.pass(25_000);
  assert.equal(
    b.lanes().CreateNetworkInterface?.rate,
    8,
    'then 2% of the cut rate a second, up to the ceiling',
  );
});

test('close() refuses the calls waiting and every later one', async () => {
  const clock = new VirtualClock();
  const b = budget(clock);
  await b.acquire('DescribeSubnets', 'read');
  const waiting = b.acquire('DescribeSubnets', 'read');
  b.close('the agent is stopping');
  await assert.rejects(waiting, {
    code: 'Ec2BudgetClosed',
    message: /DescribeSubnets not sent: the agent is stopping/,
  });
  await assert.rejects(b.acquire('AttachNetworkInterface', 'grow'), { code: 'Ec2BudgetClosed' });
});

test('describes asked again while one waits for its token share it; instance types and subnets are cached', async () => {
  const inner = new ScriptedCloud();
  const clock = new VirtualClock();
  const cloud = new LimitedCloud({
    inner,
    limit: { qps: 1, burst: 1, maxAttempts: 1 },
    log: silentLogger,
    clock,
  });
  await cloud.describeInstanceEnis('i-1'); // takes the token
  const a = cloud.describeInstanceEnis('i-1');
  const b = cloud.describeInstanceEnis('i-1');
  const other = cloud.describeInstanceEnis('i-2');
  await clock.run(Promise.all([a, b, other]));
  assert.equal(
    inner.callsOf('describeInstanceEnis').length,
    3,
    'i-1 twice (the first and the shared one), i-2 once',
  );
  await clock.run(cloud.describeInstanceEnis('i-1'));
  assert.equal(
    inner.callsOf('describeInstanceEnis').length,
    4,
    'asked after the shared one was sent: sent anew',
  );
  for (let i = 0; i < 3; i++) await clock.run(cloud.instanceTypeLimits('m5.large'));
  assert.equal(inner.callsOf('instanceTypeLimits').length, 1);
  const query = { subnetIds: ['subnet-1'] };
  await clock.run(Promise.all([cloud.describeSubnets(query), cloud.describeSubnets(query)]));
  assert.equal(inner.callsOf('describeSubnets').length, 1, 'two at once: one call');
  await clock.run(cloud.describeSubnets(query));
  assert.equal(inner.callsOf('describeSubnets').length, 2, 'asked again later: a tag may have changed');
  inner.failures.push(new CloudError('boom', 'InternalError', false));
  await assert.rejects(clock.run(cloud.instanceTypeLimits('t3.medium')));
  await clock.run(cloud.instanceTypeLimits('t3.medium'));
  assert.equal(inner.callsOf('instanceTypeLimits').length, 3, 'a failed read is not cached');
});
