import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SUBNET_A, TEST_VPC } from '../testing/test-emulator.ts';
import { IdSource, seededRandom } from './ids.ts';
import { networkLimits } from './instance-types.ts';
import { VpcState } from './state.ts';

function withTrunk(instanceType: string) {
  const state = new VpcState(TEST_VPC, new IdSource(seededRandom(11)));
  const { instance } = state.launch({ instanceType, subnetId: SUBNET_A });
  const trunk = state.createEni({ subnetId: SUBNET_A, interfaceType: 'trunk' });
  state.attach(trunk.eniId, instance.instanceId, 1);
  return { state, instance, trunk };
}

test('instance types carry the branch-ENI limits of the resource controller; t3 types have none', () => {
  const got = Object.fromEntries(
    ['t3.medium', 't3.large', 'm5.large', 'm5.xlarge', 'm5.2xlarge', 'm5.4xlarge', 'c5.large'].map((t) => [
      t,
      networkLimits(t)?.maxBranchEnis,
    ]),
  );
  assert.deepEqual(got, {
    't3.medium': 0,
    't3.large': 0,
    'm5.large': 9,
    'm5.xlarge': 18,
    'm5.2xlarge': 38,
    'm5.4xlarge': 54,
    'c5.large': 9,
  });
  assert.deepEqual(networkLimits('m5.2xlarge'), { maxEnis: 4, ipsPerEni: 15, maxBranchEnis: 38 });
});

test('a trunk takes branches up to its instance type limit; the next fails with BranchInterfaceLimitExceeded', () => {
  const { state, trunk } = withTrunk('m5.large');
  for (let vlan = 1; vlan <= 9; vlan++) {
    state.associateTrunk(state.createEni({ subnetId: SUBNET_A }).eniId, trunk.eniId, vlan);
  }
  const tenth = state.createEni({ subnetId: SUBNET_A });
  assert.throws(() => state.associateTrunk(tenth.eniId, trunk.eniId, 10), {
    code: 'BranchInterfaceLimitExceeded',
    message: /already has 9 branch interfaces, the limit of instance type m5\.large/,
  });
  assert.equal(tenth.trunkAssociation, undefined);
  // A released VLAN makes room again.
  const first = state.branchesOf(trunk.eniId)[0]!;
  state.disassociateTrunk(first.trunkAssociation!.associationId);
  state.associateTrunk(tenth.eniId, trunk.eniId, 10);
  assert.equal(state.branchesOf(trunk.eniId).length, 9);
});

test('a trunk cannot be attached to an instance type without trunking, nor take branches unattached', () => {
  const state = new VpcState(TEST_VPC, new IdSource(seededRandom(12)));
  const { instance } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  const trunk = state.createEni({ subnetId: SUBNET_A, interfaceType: 'trunk' });
  assert.throws(() => state.attach(trunk.eniId, instance.instanceId, 1), {
    code: 'UnsupportedOperation',
    message: /t3\.medium .* does not support trunk network interfaces/,
  });
  assert.equal(trunk.attachment, undefined);
  const branch = state.createEni({ subnetId: SUBNET_A });
  assert.throws(() => state.associateTrunk(branch.eniId, trunk.eniId, 1), {
    code: 'IncorrectState',
    message: /is not attached to an instance/,
  });
});
