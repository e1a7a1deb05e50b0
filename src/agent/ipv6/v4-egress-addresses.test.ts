import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Attachment } from '../../plan/attachment.ts';
import { planIpv6Pod } from '../../plan/ipv6-pod-plan.ts';
import { heldEgressAddresses, V4EgressAddresses } from './v4-egress-addresses.ts';

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
  const pool = new V4EgressAddresses();
  assert.equal(pool.allocate(new Set()), '169.254.172.2');
  assert.equal(pool.allocate(new Set()), '169.254.172.3', 'a freed address is reused last, not next');
  assert.equal(pool.allocate(new Set(['169.254.172.4', '169.254.172.5'])), '169.254.172.6');
});

test('never .0, .1 or the broadcast address; every other one of the /22 is handed out once, then none', () => {
  const pool = new V4EgressAddresses();
  const held = new Set<string>();
  for (;;) {
    const ip = pool.allocate(held);
    if (ip === undefined) break;
    assert.ok(!held.has(ip), `${ip} handed out twice`);
    held.add(ip);
  }
  assert.equal(held.size, 1021);
  assert.equal(V4EgressAddresses.capacity, 1021);
  for (const never of ['169.254.172.0', '169.254.172.1', '169.254.175.255'])
    assert.ok(!held.has(never), never);
  assert.ok(held.has('169.254.175.254'));
  held.delete('169.254.173.7');
  assert.equal(pool.allocate(held), '169.254.173.7', 'a freed one comes back when it is the only one');
});

test("a restart never hands out an address a recorded pod holds (the ledger's records are read)", () => {
  const records = [attachment('a', '169.254.172.2'), attachment('b', '169.254.172.3')];
  const held = heldEgressAddresses(records);
  assert.deepEqual([...held].sort(), ['169.254.172.2', '169.254.172.3']);
  assert.equal(new V4EgressAddresses().allocate(held), '169.254.172.4');
});
