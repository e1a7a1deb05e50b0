import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { CensusView, censusOf } from '../../ipam/census/subnet-census.ts';
import { registerCapacityMetrics } from './capacity-metrics.ts';

test('each subnet of the census is a series of free /28s, free addresses and census age; the leader says so', async () => {
  const views = [
    new CensusView(
      censusOf({
        subnetId: 'subnet-a',
        cidr: '10.0.0.0/24',
        takenAt: 1_000,
        addresses: ['10.0.0.20'],
        prefixes: [],
        reservations: [],
      }),
    ),
    new CensusView(
      censusOf({
        subnetId: 'subnet-b',
        cidr: '10.0.1.0/28',
        takenAt: 31_000,
        addresses: [],
        prefixes: [],
        reservations: [],
      }),
    ),
  ];
  let role = 'follower';
  const r = new Registry();
  registerCapacityMetrics(r, {
    now: () => 61_000,
    census: { views: () => views, state: () => ({ role }) },
    singles: () => ({ named: 0, collisions: 0, counted: 0, namedPrefixes: 2, namedPrimaries: 1 }),
    censusSkips: () => 4,
  });
  const text = await r.metrics();
  assert.match(text, /^vpcnet_subnet_free_prefixes\{subnet="subnet-a"\} 13$/m);
  assert.match(
    text,
    /^vpcnet_subnet_free_prefixes\{subnet="subnet-b"\} 0$/m,
    'a /28 subnet holds AWS addresses',
  );
  assert.match(text, /^vpcnet_subnet_free_addresses\{subnet="subnet-a"\} 250$/m);
  assert.match(text, /^vpcnet_subnet_free_addresses\{subnet="subnet-b"\} 11$/m);
  assert.match(text, /^vpcnet_subnet_census_age_seconds\{subnet="subnet-a"\} 60$/m);
  assert.match(text, /^vpcnet_subnet_census_leader 0$/m);
  assert.match(text, /^vpcnet_prefix_census_skips_total 4$/m);
  assert.match(text, /^vpcnet_census_named_total\{what="prefix"\} 2$/m);
  assert.match(text, /^vpcnet_census_named_total\{what="eniPrimaryIp"\} 1$/m);
  role = 'leader';
  views.pop();
  const again = await r.metrics();
  assert.match(again, /^vpcnet_subnet_census_leader 1$/m);
  assert.doesNotMatch(again, /subnet-b/, 'a subnet no longer censused leaves the scrape');
});
