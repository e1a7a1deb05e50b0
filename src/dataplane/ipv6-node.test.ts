import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from './dataplane.ts';
import {
  removeEgressScript,
  setupEgressScript,
  V4_EGRESS_TABLE,
  V6_EGRESS_TABLE,
} from './ip-cli/egress-snat.ts';
import { IPV6_FORWARDING_SYSCTL, Ipv6NodeError } from './ipv6-node.ts';
import { FakeKernel } from './testing/fake-kernel.ts';

test('IPv6 mode refuses to start where IPv6 forwarding is off, naming the sysctl, and changes nothing', async () => {
  const kernel = new FakeKernel();
  kernel.sysctls.set(IPV6_FORWARDING_SYSCTL, '0');
  await assert.rejects(
    new Dataplane(kernel).setupIpv6Node({ v4Egress: { snatSource: '10.0.0.10' } }),
    (err: unknown) =>
      err instanceof Ipv6NodeError &&
      /net\.ipv6\.conf\.all\.forwarding=1 .* it is 0/.test(err.message) &&
      /vpcnetctl install --ipv6-forwarding/.test(err.message),
  );
  assert.equal(kernel.v4EgressConfig, undefined);
  assert.equal(kernel.sysctls.get(IPV6_FORWARDING_SYSCTL), '0', 'the agent sets no sysctl');
});

test('with forwarding on, the IPv4 egress SNAT is set up as configured, and removed when egress is off', async () => {
  const kernel = new FakeKernel();
  const dp = new Dataplane(kernel);
  await dp.setupIpv6Node({ v4Egress: { snatSource: '10.0.0.10', randomizeSnat: 'hashrandom' } });
  assert.deepEqual(kernel.v4EgressConfig, { snatSource: '10.0.0.10', randomizeSnat: 'hashrandom' });
  await dp.setupIpv6Node({ v4Egress: undefined });
  assert.equal(kernel.v4EgressConfig, undefined);
});

test('the egress SNAT is one rule for the whole range in a table of its own, replaced whole, removable when absent', () => {
  assert.equal(
    setupEgressScript(V4_EGRESS_TABLE, { snatSource: '10.0.0.10' }),
    [
      'add table ip vpcnet_v4egress',
      'add chain ip vpcnet_v4egress postrouting { type nat hook postrouting priority srcnat; policy accept; }',
      'flush chain ip vpcnet_v4egress postrouting',
      'add rule ip vpcnet_v4egress postrouting ip saddr 169.254.172.0/22 ip daddr != 169.254.172.0/22 snat to 10.0.0.10 fully-random',
      'add chain ip vpcnet_v4egress forward { type filter hook forward priority filter; policy accept; }',
      'flush chain ip vpcnet_v4egress forward',
      'add rule ip vpcnet_v4egress forward ip daddr 169.254.172.0/22 ct state new reject',
      '',
    ].join('\n'),
  );
  assert.match(
    setupEgressScript(V4_EGRESS_TABLE, { snatSource: '10.0.0.10', randomizeSnat: 'none' }),
    /snat to 10\.0\.0\.10\n/,
  );
  assert.throws(
    () => setupEgressScript(V4_EGRESS_TABLE, { snatSource: '10.0.0.10; flush ruleset' }),
    /not an IPv4 address/,
  );
  assert.equal(
    removeEgressScript(V4_EGRESS_TABLE),
    'add table ip vpcnet_v4egress\ndelete table ip vpcnet_v4egress\n',
  );
});

test("IPv4 pods' IPv6 egress is the same in table ip6 vpcnet_v6egress, SNATed to the node's IPv6", () => {
  const script = setupEgressScript(V6_EGRESS_TABLE, {
    snatSource: '2001:db8::10',
    randomizeSnat: 'hashrandom',
  });
  assert.match(
    script,
    /add rule ip6 vpcnet_v6egress postrouting ip6 saddr fd00::ac:0\/118 ip6 daddr != fd00::ac:0\/118 snat to 2001:db8::10 random\n/,
  );
  assert.match(
    script,
    /add rule ip6 vpcnet_v6egress forward ip6 daddr fd00::ac:0\/118 ct state new reject\n/,
  );
  assert.throws(() => setupEgressScript(V6_EGRESS_TABLE, { snatSource: '10.0.0.10' }), /not an IPv6 address/);
  assert.equal(
    removeEgressScript(V6_EGRESS_TABLE),
    'add table ip6 vpcnet_v6egress\ndelete table ip6 vpcnet_v6egress\n',
  );
});
