import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { AddressPool } from '../../ipam/pool/pool.ts';
import type { PoolHealth } from '../../ipam/pool/pool-manager.ts';
import { prefixAddresses } from '../../ipam/prefixes/prefixes.ts';
import { eniSpec } from '../../ipam/testing/eni-spec.ts';
import { parseExposition, sample } from '../../metrics/testing/exposition.ts';
import { registerPoolUsageMetrics } from './pool-metrics.ts';

/** A pool of two ENIs: the primary with two secondary IPs, the second with a /28 and one secondary IP. */
function node() {
  const pool = new AddressPool({ cooldownMs: 30_000 });
  pool.addEni(eniSpec('eni-a', 0));
  pool.addEni(eniSpec('eni-b', 1));
  pool.addAddresses('eni-a', ['10.0.0.20', '10.0.0.21']);
  pool.addAddresses('eni-b', [...prefixAddresses('10.0.1.32/28'), '10.0.1.99']);
  const prefixes = new Map([['eni-b', ['10.0.1.32/28']]]);
  const taken = { enis: 0, addresses: 0 };
  const manager = {
    prefixesOf: (eniId: string) => prefixes.get(eniId) ?? [],
    health: () => ({ sync: { takenFromPods: { ...taken } } }) as unknown as PoolHealth,
  };
  const r = new Registry();
  registerPoolUsageMetrics(r, { pool, manager });
  return { pool, taken, r };
}

async function scrape(r: Registry) {
  return parseExposition(await r.metrics());
}

test('assigned addresses per ENI and per CIDR follow the pool: a secondary IP is its /32, a prefix’s addresses its /28', async () => {
  const { pool, r } = node();
  pool.allocate('vpcnet/p1/eth0', 0);
  assert.ok(pool.restoreAssigned('10.0.1.33', 'vpcnet/p2/eth0'));
  assert.ok(pool.restoreAssigned('10.0.1.40', 'vpcnet/p3/eth0'));
  assert.ok(pool.restoreAssigned('10.0.1.99', 'vpcnet/p4/eth0'));
  let s = await scrape(r);
  assert.equal(sample(s, 'awscni_assigned_ip_per_eni', { eni: 'eni-a' }), 1);
  assert.equal(sample(s, 'awscni_assigned_ip_per_eni', { eni: 'eni-b' }), 3);
  assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: '10.0.0.20/32' }), 1);
  assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: '10.0.0.21/32' }), 0, 'a free one is 0');
  assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: '10.0.1.32/28' }), 2);
  assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: '10.0.1.99/32' }), 1);
  assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: '10.0.1.33/32' }), undefined);
  assert.equal(sample(s, 'awscni_total_ipv4_prefixes'), 1);

  pool.release('10.0.1.33', 0);
  pool.release('10.0.1.40', 0);
  pool.release('10.0.1.99', 0);
  pool.removeEni('eni-b');
  s = await scrape(r);
  assert.equal(sample(s, 'awscni_assigned_ip_per_eni', { eni: 'eni-b' }), undefined, 'gone with its ENI');
  assert.equal(sample(s, 'awscni_assigned_ip_per_cidr', { cidr: '10.0.1.32/28' }), undefined);
  assert.equal(sample(s, 'awscni_total_ipv4_prefixes'), 0, 'only the pool’s ENIs’ prefixes count');
  assert.equal(sample(s, 'awscni_assigned_ip_per_eni', { eni: 'eni-a' }), 1);
});

test('force-removed ENIs and addresses are the EC2 sync’s count of what EC2 took away from pods', async () => {
  const { taken, r } = node();
  let s = await scrape(r);
  assert.equal(sample(s, 'awscni_force_removed_enis'), 0);
  assert.equal(sample(s, 'awscni_force_removed_ips'), 0);
  taken.enis = 1;
  taken.addresses = 3;
  s = await scrape(r);
  assert.equal(sample(s, 'awscni_force_removed_enis'), 1);
  assert.equal(sample(s, 'awscni_force_removed_ips'), 3);
});
