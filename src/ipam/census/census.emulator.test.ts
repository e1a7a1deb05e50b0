// A census taken through the real AWS driver equals the emulator's ground truth exactly, on every
// seed: subnets pre-fragmented by other tenants' ENIs, prefixes and CIDR reservations of both
// kinds, plus the node's own addresses and prefixes; one DescribeNetworkInterfaces page per census.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../emulator/vpc/ids.ts';
import { startEmulatedNode } from '../testing/emulated-node.ts';
import { takeCensus } from './census-reading.ts';
import { CensusView } from './subnet-census.ts';

const SUBNET = 'subnet-0ipam';
const CIDR = '10.1.0.0/20';
const quiet = { info() {}, warn() {}, error() {} };

for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
  test(`seed ${seed}: the census equals the ground truth, /28 by /28`, async () => {
    const r = seededRandom(seed * 977);
    const third = Math.floor(r() * 64) * 64; // a /26 somewhere in the /20
    const node = await startEmulatedNode({
      instanceType: 'm5.large',
      seed,
      nodeSubnet: {
        cidr: CIDR,
        preFragmentation: {
          seed,
          tenantEnis: 20 + Math.floor(r() * 40),
          addressesPerEni: 2 + Math.floor(r() * 6),
          prefixesPerEni: Math.floor(r() * 3),
          reservations: [
            {
              cidr: `10.1.${Math.floor(third / 256)}.${third % 256}/26`,
              type: r() < 0.5 ? 'prefix' : 'explicit',
            },
          ],
        },
      },
    });
    try {
      const eni = node.instance.primaryEni.eniId;
      await node.cloud.assignIpv4Prefixes(eni, 2);
      await node.cloud.assignPrivateIps(eni, 3);
      const census = new CensusView(await takeCensus(node.cloud, { subnetId: SUBNET, cidr: CIDR }, 0, quiet));
      const truth = await node.capacity(SUBNET);
      assert.deepEqual(census.freePrefixBlocks(), truth.freePrefixes);
      assert.deepEqual(census.figures(), {
        freePrefixes: truth.freePrefixes.length,
        freeAddresses: truth.freeAddresses,
      });
      assert.ok(truth.freePrefixes.length < 200, 'the subnet is fragmented');
      const calls = (
        (await node.admin('GET', '/admin/state')) as { ec2Calls: Record<string, { calls: number }> }
      ).ec2Calls;
      assert.equal(calls.DescribeNetworkInterfaces?.calls, 1, 'one page');
      assert.equal(calls.GetSubnetCidrReservations?.calls, 1);
    } finally {
      await node.close();
    }
  });
}
