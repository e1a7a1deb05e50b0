import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from '../../dataplane/dataplane.ts';
import { IPV6_FORWARDING_SYSCTL, Ipv6NodeError } from '../../dataplane/ipv6-node.ts';
import { FakeKernel } from '../../dataplane/testing/fake-kernel.ts';
import { startIpv6 } from './ipv6-start.ts';

const snat = { randomize: 'prng', excludeCidrs: [], vpcCidrRefreshSeconds: 0 } as const;

test('IPv6 start with IPv4 egress: the egress SNAT to the primary IPv4 with the RANDOMIZESNAT flag, and egress addresses for ADD', async () => {
  const kernel = new FakeKernel();
  const fields = await startIpv6(
    { ipv6: { enabled: true, v4Egress: true }, snat: { ...snat, randomize: 'hashrandom' } },
    new Dataplane(kernel),
    '10.0.0.10',
  );
  assert.deepEqual(kernel.v4EgressConfig, { snatSource: '10.0.0.10', randomizeSnat: 'hashrandom' });
  assert.equal(fields.v4Egress?.allocate(new Set()), '169.254.172.2');
});

test('IPv6 start without IPv4 egress removes the egress SNAT and gives ADD no egress addresses', async () => {
  const kernel = new FakeKernel();
  kernel.v4EgressConfig = { snatSource: '10.0.0.10' };
  const fields = await startIpv6(
    { ipv6: { enabled: true, v4Egress: false }, snat },
    new Dataplane(kernel),
    '10.0.0.10',
  );
  assert.equal(kernel.v4EgressConfig, undefined);
  assert.deepEqual(fields, {});
});

test('IPv6 start on a node without IPv6 forwarding is refused', async () => {
  const kernel = new FakeKernel();
  kernel.sysctls.set(IPV6_FORWARDING_SYSCTL, '0');
  await assert.rejects(
    startIpv6({ ipv6: { enabled: true, v4Egress: true }, snat }, new Dataplane(kernel), '10.0.0.10'),
    Ipv6NodeError,
  );
});
