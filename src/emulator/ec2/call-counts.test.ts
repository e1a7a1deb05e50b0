import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ec2CallCounts } from './call-counts.ts';

test('call counts add up calls and failures per action, and a snapshot does not change later', () => {
  const counts = new Ec2CallCounts();
  counts.record('AssignPrivateIpAddresses', false);
  counts.record('AssignPrivateIpAddresses', true);
  counts.record('DescribeNetworkInterfaces', false);
  const before = counts.snapshot();
  counts.record('DescribeNetworkInterfaces', false);
  assert.deepEqual(before, {
    AssignPrivateIpAddresses: { calls: 2, errors: 1 },
    DescribeNetworkInterfaces: { calls: 1, errors: 0 },
  });
  assert.equal(counts.snapshot().DescribeNetworkInterfaces?.calls, 2);
});
