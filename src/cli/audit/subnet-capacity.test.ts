// The audit's per-subnet figures are the census's: the same count `vpcnetctl status` shows, with
// the reservations the census Lease publishes, and said to be without them when it has none.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CENSUS_ANNOTATION, encodeCensus } from '../../ipam/census/census-wire.ts';
import { censusOf } from '../../ipam/census/subnet-census.ts';
import { fixedKube } from '../testing/fixed-kube.ts';
import type { Ec2Eni } from './model.ts';
import { leaseReservations, subnetCapacity } from './subnet-capacity.ts';

const SUBNET = {
  subnetId: 'subnet-a',
  cidr: '10.0.0.0/24',
  availabilityZone: 'z1',
  availableIpCount: 233,
  tags: { 'kubernetes.io/role/cni': '1' },
};

const eni = (over: Partial<Ec2Eni>): Ec2Eni => ({
  eniId: 'eni-1',
  subnetId: 'subnet-a',
  status: 'in-use',
  interfaceType: 'interface',
  secondaryIps: [],
  ipv4Prefixes: [],
  description: '',
  tags: {},
  ...over,
});

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/vpcnet-subnet-census';

test("a subnet's free addresses and /28s count every ENI's addresses and prefixes, and the Lease's reservations", async () => {
  const reservations = [{ cidr: '10.0.0.128/26', type: 'explicit' as const }];
  const census = censusOf({
    subnetId: 'subnet-a',
    cidr: '10.0.0.0/24',
    takenAt: 0,
    addresses: [],
    prefixes: [],
    reservations,
  });
  const kube = fixedKube({
    [LEASE]: { metadata: { annotations: { [CENSUS_ANNOTATION]: encodeCensus([census]) } } },
  });
  const known = await leaseReservations(kube, 'kube-system/vpcnet-subnet-census');
  assert.equal(known.note, undefined);
  assert.deepEqual(known.known.get('subnet-a'), reservations);
  const enis = [
    eni({ primaryIp: '10.0.0.10', secondaryIps: ['10.0.0.11', '10.0.0.40'] }),
    eni({ eniId: 'eni-2', primaryIp: '10.0.0.50', ipv4Prefixes: ['10.0.0.64/28'] }),
    eni({ eniId: 'eni-3', subnetId: 'subnet-b', primaryIp: '10.0.0.100' }),
  ];
  const [row] = subnetCapacity([SUBNET], enis, known.known, 0);
  // /28s: 16 less the first and last (AWS's), .0/28 .32/28 .48/28 .64/28 taken, 4 reserved: 14-3-4.
  assert.deepEqual(row, {
    subnetId: 'subnet-a',
    cidr: '10.0.0.0/24',
    availabilityZone: 'z1',
    ec2FreeAddresses: 233,
    freeAddresses: 251 - 4 - 16 - 64,
    free28s: 14 - 3 - 4,
    reservationsKnown: true,
    enis: 2,
    tags: SUBNET.tags,
  });
});

test('without a census Lease the counts leave reservations out and say so', async () => {
  const known = await leaseReservations(fixedKube({}), 'kube-system/vpcnet-subnet-census');
  assert.equal(known.known.size, 0);
  assert.match(known.note ?? '', /^there is no census Lease kube-system\/vpcnet-subnet-census /);
  const [row] = subnetCapacity([SUBNET], [], known.known, 0);
  assert.equal(row?.reservationsKnown, false);
  assert.equal(row?.free28s, 14);
  assert.equal(row?.freeAddresses, 251);
});
