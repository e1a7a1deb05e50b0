import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Attachment } from '../plan/attachment.ts';
import { planIpv6Pod } from '../plan/ipv6-pod-plan.ts';
import { planRegularPod } from '../plan/pod-plan.ts';
import {
  EgressAddresses,
  heldEgressAddresses,
  V4_EGRESS_RANGE,
  V6_EGRESS_RANGE,
} from './egress-addresses.ts';

function attachment(containerId: string, v4EgressIp: string): Attachment {
  const key = { network: 'vpcnet', containerId, ifName: 'eth0' };
  return {
    key,
    pod: {},
    netns: `/var/run/netns/${containerId}`,
    createdAt: 0,
    resources: planIpv6Pod({
      key,
      vethPrefix: 'vpc',
      ip: '2001:db8::5',
      eniId: 'eni-1',
      mtu: 9001,
      v4EgressIp,
    }),
  };
}

test('egress addresses start at .2 of 169.254.172.0/22, go round in turn, and skip what pods hold', () => {
  const pool = new EgressAddresses(V4_EGRESS_RANGE);
  assert.equal(pool.allocate(new Set()), '169.254.172.2');
  assert.equal(pool.allocate(new Set()), '169.254.172.3', 'a freed address is reused last, not next');
  assert.equal(pool.allocate(new Set(['169.254.172.4', '169.254.172.5'])), '169.254.172.6');
});

test('never .0, .1 or the broadcast address; every other one of the /22 is handed out once, then none', () => {
  const pool = new EgressAddresses(V4_EGRESS_RANGE);
  const held = new Set<string>();
  for (;;) {
    const ip = pool.allocate(held);
    if (ip === undefined) break;
    assert.ok(!held.has(ip), `${ip} handed out twice`);
    held.add(ip);
  }
  assert.equal(held.size, 1021);
  assert.equal(pool.capacity, 1021);
  for (const never of ['169.254.172.0', '169.254.172.1', '169.254.175.255'])
    assert.ok(!held.has(never), never);
  assert.ok(held.has('169.254.175.254'));
  held.delete('169.254.173.7');
  assert.equal(pool.allocate(held), '169.254.173.7', 'a freed one comes back when it is the only one');
});

test("a restart never hands out an address a recorded pod holds (the ledger's records are read)", () => {
  const records = [attachment('a', '169.254.172.2'), attachment('b', '169.254.172.3')];
  const held = heldEgressAddresses(V4_EGRESS_RANGE, records);
  assert.deepEqual([...held].sort(), ['169.254.172.2', '169.254.172.3']);
  assert.equal(new EgressAddresses(V4_EGRESS_RANGE).allocate(held), '169.254.172.4');
});

test('the IPv6 range fd00::ac:0/118 is handed out the same way: from its third address, 1021 in all, held ones skipped', () => {
  const pool = new EgressAddresses(V6_EGRESS_RANGE);
  assert.equal(pool.capacity, 1021);
  assert.equal(pool.allocate(new Set()), 'fd00::ac:2');
  assert.equal(pool.allocate(new Set(['fd00::ac:3'])), 'fd00::ac:4');
  assert.equal(V6_EGRESS_RANGE.offsetOf('fd00::ac:3fe'), 1022);
  assert.equal(V6_EGRESS_RANGE.offsetOf('fd00::ad:0'), undefined);
  assert.equal(V6_EGRESS_RANGE.offsetOf('169.254.172.2'), undefined);
  assert.equal(V4_EGRESS_RANGE.offsetOf('fd00::ac:2'), undefined);
});

test("the IPv6 egress addresses IPv4 pods' records hold are read from their v6if0, not their VPC address", () => {
  const key = { network: 'vpcnet', containerId: 'a', ifName: 'eth0' };
  const att: Attachment = {
    key,
    pod: {},
    netns: '/var/run/netns/a',
    createdAt: 0,
    resources: planRegularPod({
      key,
      vethPrefix: 'vpc',
      ip: '10.0.1.5',
      eniId: 'eni-1',
      routeTable: 2,
      mtu: 9001,
      snat: true,
      v6EgressIp: 'fd00::ac:2',
    }),
  };
  assert.deepEqual([...heldEgressAddresses(V6_EGRESS_RANGE, [att])], ['fd00::ac:2']);
  assert.deepEqual([...heldEgressAddresses(V4_EGRESS_RANGE, [att])], []);
  assert.equal(
    new EgressAddresses(V6_EGRESS_RANGE).allocate(heldEgressAddresses(V6_EGRESS_RANGE, [att])),
    'fd00::ac:3',
  );
});
