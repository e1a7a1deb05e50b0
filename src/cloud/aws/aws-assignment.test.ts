import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CloudError } from '../cloud.ts';
import {
  assignmentParams,
  assignmentText,
  checkAssigned,
  IPV4_PREFIXES,
  SECONDARY_IPS,
} from './aws-assignment.ts';

test('a count that is not a positive integer is refused before any call, naming what was asked', () => {
  for (const count of [0, -1, 1.5]) {
    assert.throws(
      () => assignmentText('eni-1', count, SECONDARY_IPS),
      (err: unknown) =>
        err instanceof CloudError &&
        err.code === 'InvalidParameterValue' &&
        err.message.includes(`assign ${count} private IPs to ENI eni-1`),
    );
  }
  assert.equal(assignmentText('eni-1', 2, IPV4_PREFIXES), 'assign 2 IPv4 prefixes to ENI eni-1');
});

test('each kind asks EC2 with its own count parameter', () => {
  assert.deepEqual(assignmentParams('eni-1', 3, SECONDARY_IPS), {
    NetworkInterfaceId: 'eni-1',
    SecondaryPrivateIpAddressCount: 3,
  });
  assert.deepEqual(assignmentParams('eni-1', 1, IPV4_PREFIXES), {
    NetworkInterfaceId: 'eni-1',
    Ipv4PrefixCount: 1,
  });
});

test('the reply must hold exactly the count asked, each value of the kind asked', () => {
  assert.deepEqual(checkAssigned('d', 2, SECONDARY_IPS, ['10.0.0.5', '10.0.0.6']), ['10.0.0.5', '10.0.0.6']);
  assert.deepEqual(checkAssigned('d', 1, IPV4_PREFIXES, ['10.0.1.16/28']), ['10.0.1.16/28']);
  assert.throws(
    () => checkAssigned('d', 2, SECONDARY_IPS, ['10.0.0.5']),
    /2 IPv4 AssignedPrivateIpAddresses/,
  );
  assert.throws(() => checkAssigned('d', 1, SECONDARY_IPS, ['10.0.1.16/28']), /AssignedPrivateIpAddresses/);
  assert.throws(() => checkAssigned('d', 1, IPV4_PREFIXES, ['10.0.0.5']), /1 AssignedIpv4Prefixes/);
  assert.throws(() => checkAssigned('d', 1, IPV4_PREFIXES, [undefined]), /AssignedIpv4Prefixes/);
});
