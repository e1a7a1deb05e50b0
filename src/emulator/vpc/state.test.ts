import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SUBNET_A, SUBNET_OTHER_AZ, SUBNET_SMALL, TEST_VPC } from '../testing/test-emulator.ts';
import { IdSource, seededRandom } from './ids.ts';
import { VpcState } from './state.ts';

function fresh(): VpcState {
  return new VpcState(TEST_VPC, new IdSource(seededRandom(7)));
}

test('ids have the EC2 shapes: i-/eni-/eni-attach- plus 17 hex digits, MAC 02:…', () => {
  const state = fresh();
  const { instance, primaryEni } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  assert.match(instance.instanceId, /^i-[0-9a-f]{17}$/);
  assert.match(primaryEni.eniId, /^eni-[0-9a-f]{17}$/);
  assert.match(primaryEni.attachment!.attachmentId, /^eni-attach-[0-9a-f]{17}$/);
  assert.match(primaryEni.mac, /^02(:[0-9a-f]{2}){5}$/);
});

test('launch attaches the primary ENI at device 0 with DeleteOnTermination', () => {
  const state = fresh();
  const { instance, primaryEni } = state.launch({ instanceType: 'm5.large', subnetId: SUBNET_A });
  assert.equal(primaryEni.attachment?.instanceId, instance.instanceId);
  assert.equal(primaryEni.attachment?.deviceIndex, 0);
  assert.equal(primaryEni.attachment?.deleteOnTermination, true);
  assert.equal(primaryEni.primaryIp, '10.0.0.4');
});

test('launch of an unknown instance type or subnet fails', () => {
  const state = fresh();
  assert.throws(() => state.launch({ instanceType: 'x1.huge', subnetId: SUBNET_A }), {
    code: 'InvalidParameterValue',
  });
  assert.throws(() => state.launch({ instanceType: 'm5.large', subnetId: 'subnet-nope' }), {
    code: 'InvalidSubnetID.NotFound',
  });
});

test('attaching past the instance type ENI limit fails with AttachmentLimitExceeded', () => {
  const state = fresh();
  const { instance } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  for (const index of [1, 2])
    state.attach(state.createEni({ subnetId: SUBNET_A }).eniId, instance.instanceId, index);
  const fourth = state.createEni({ subnetId: SUBNET_A });
  assert.throws(() => state.attach(fourth.eniId, instance.instanceId, 3), {
    code: 'AttachmentLimitExceeded',
  });
  assert.equal(fourth.attachment, undefined);
  assert.equal(state.enisOf(instance.instanceId).length, 3);
});

test('attaching at a device index in use, an ENI in use, or across AZs fails with InvalidParameterValue', () => {
  const state = fresh();
  const { instance, primaryEni } = state.launch({ instanceType: 'm5.xlarge', subnetId: SUBNET_A });
  const eni = state.createEni({ subnetId: SUBNET_A });
  assert.throws(() => state.attach(eni.eniId, instance.instanceId, 0), { code: 'InvalidParameterValue' });
  assert.throws(() => state.attach(primaryEni.eniId, instance.instanceId, 2), {
    code: 'InvalidParameterValue',
  });
  const far = state.createEni({ subnetId: SUBNET_OTHER_AZ });
  assert.throws(() => state.attach(far.eniId, instance.instanceId, 1), { code: 'InvalidParameterValue' });
});

test('assigning past the per-ENI address limit fails with PrivateIpAddressLimitExceeded and assigns nothing', () => {
  const state = fresh();
  const { primaryEni } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  assert.equal(state.assign(primaryEni.eniId, { count: 5 }).length, 5);
  assert.throws(() => state.assign(primaryEni.eniId, { count: 1 }), {
    code: 'PrivateIpAddressLimitExceeded',
  });
  assert.equal(primaryEni.secondaryIps.length, 5);
});

test('a subnet that runs dry fails with InsufficientFreeAddressesInSubnet', () => {
  const state = fresh();
  const { primaryEni } = state.launch({ instanceType: 'm5.4xlarge', subnetId: SUBNET_SMALL });
  state.assign(primaryEni.eniId, { count: 10 });
  assert.throws(() => state.assign(primaryEni.eniId, { count: 1 }), {
    code: 'InsufficientFreeAddressesInSubnet',
  });
});

test('many assigns across ENIs never hand out the same address twice', () => {
  const state = fresh();
  const seen = new Set<string>();
  for (let n = 0; n < 6; n++) {
    const { instance, primaryEni } = state.launch({ instanceType: 'm5.4xlarge', subnetId: SUBNET_A });
    seen.add(primaryEni.primaryIp);
    const second = state.createEni({ subnetId: SUBNET_A });
    seen.add(second.primaryIp);
    state.attach(second.eniId, instance.instanceId, 1);
    for (const eni of [primaryEni, second]) {
      for (let k = 0; k < 3; k++) for (const ip of state.assign(eni.eniId, { count: 3 })) seen.add(ip);
    }
    state.unassign(primaryEni.eniId, primaryEni.secondaryIps.slice(0, 2));
  }
  const held = state.enis().flatMap((e) => [e.primaryIp, ...e.secondaryIps]);
  assert.equal(new Set(held).size, held.length);
  assert.equal(held.length, 6 * 2 * 10 - 6 * 2);
});

test('unassigning the primary or a foreign address fails and changes nothing', () => {
  const state = fresh();
  const { primaryEni } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  const [ip] = state.assign(primaryEni.eniId, { count: 1 });
  assert.throws(() => state.unassign(primaryEni.eniId, [primaryEni.primaryIp]), {
    code: 'InvalidParameterValue',
  });
  assert.throws(() => state.unassign(primaryEni.eniId, [ip!, '10.0.0.99']), {
    code: 'InvalidParameterValue',
  });
  assert.deepEqual(primaryEni.secondaryIps, [ip]);
});

test('an attached ENI cannot be deleted; detached, its addresses return to the subnet', () => {
  const state = fresh();
  const { instance } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  const eni = state.createEni({ subnetId: SUBNET_A });
  const eniAttachment = state.attach(eni.eniId, instance.instanceId, 1);
  state.assign(eni.eniId, { count: 2 });
  assert.throws(() => state.deleteEni(eni.eniId), { code: 'InvalidParameterValue' });
  const before = state.subnet(SUBNET_A).availableCount;
  state.detach(eniAttachment.attachmentId);
  state.deleteEni(eni.eniId);
  assert.equal(state.subnet(SUBNET_A).availableCount, before + 3);
  assert.throws(() => state.eni(eni.eniId), { code: 'InvalidNetworkInterfaceID.NotFound' });
});

test('the primary ENI cannot be detached', () => {
  const state = fresh();
  const { primaryEni } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  assert.throws(() => state.detach(primaryEni.attachment!.attachmentId), { code: 'OperationNotPermitted' });
  assert.throws(() => state.detach('eni-attach-00000000000000000'), { code: 'InvalidAttachmentID.NotFound' });
});

test('an instance is found by any address of its attached ENIs', () => {
  const state = fresh();
  const { instance, primaryEni } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  const [ip] = state.assign(primaryEni.eniId, { count: 1 });
  assert.equal(state.instanceByAddress(primaryEni.primaryIp)?.instanceId, instance.instanceId);
  assert.equal(state.instanceByAddress(ip!)?.instanceId, instance.instanceId);
  assert.equal(state.instanceByAddress('10.9.9.9'), undefined);
});

test('a VPC whose subnets overlap, leave the VPC CIDR or are smaller than /28 is refused', () => {
  const ids = new IdSource(seededRandom(1));
  const vpc = (subnets: { cidr: string }[]) => ({
    vpcId: 'vpc-1',
    cidr: '10.0.0.0/16',
    region: 'us-west-2',
    subnets: subnets.map((s, i) => ({
      subnetId: `subnet-${i}`,
      cidr: s.cidr,
      availabilityZone: 'us-west-2a',
    })),
  });
  assert.throws(
    () => new VpcState(vpc([{ cidr: '10.0.0.0/24' }, { cidr: '10.0.0.128/25' }]), ids),
    /overlaps/,
  );
  assert.throws(() => new VpcState(vpc([{ cidr: '10.1.0.0/24' }]), ids), /inside/);
  assert.throws(() => new VpcState(vpc([{ cidr: '10.0.0.0/29' }]), ids), /28/);
  assert.doesNotThrow(() => new VpcState(vpc([{ cidr: '10.0.0.0/24' }, { cidr: '10.0.1.0/24' }]), ids));
});
