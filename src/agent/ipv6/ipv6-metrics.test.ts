import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { Ipv6PoolView } from '../../ipam/prefixes/ipv6-prefix-pool.ts';
import { registerIpv6Metrics } from './ipv6-metrics.ts';

test('the IPv6 gauges read the source at scrape time: assigned, cooling, and whether the /80 is held', async () => {
  let view: Ipv6PoolView = {
    mode: 'ipv6-prefix',
    prefix: null,
    eniId: null,
    assigned: 0,
    cooling: 0,
    problem: 'no IPv6 /80 on this node: EC2 throttled',
  };
  const registry = new Registry();
  registerIpv6Metrics(registry, { view: () => view });
  assert.match(await registry.metrics(), /^vpcnet_ipv6_prefix_held 0$/m);
  view = {
    ...view,
    prefix: '2001:db8:5e00:0:1::/80',
    eniId: 'eni-1',
    assigned: 7,
    cooling: 2,
    problem: null,
  };
  const text = await registry.metrics();
  assert.match(text, /^vpcnet_ipv6_prefix_held 1$/m);
  assert.match(text, /^vpcnet_ipv6_assigned_addresses 7$/m);
  assert.match(text, /^vpcnet_ipv6_cooling_addresses 2$/m);
});
