import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeKernel } from './testing/fake-kernel.ts';
import { setupV6EgressNode } from './v6-egress-node.ts';

function recorder() {
  const warned: string[] = [];
  return { warned, log: { warn: (m: string) => warned.push(m), debug: () => {} } };
}

test("on: the node's IPv6 is the SNAT source of the pods' range; off: the table goes", async () => {
  const kernel = new FakeKernel();
  const { log, warned } = recorder();
  const cfg = { enabled: true, nodeIpv6: '2001:db8::10', randomizeSnat: 'prng' } as const;
  assert.equal(await setupV6EgressNode(kernel, cfg, log), true);
  assert.deepEqual(kernel.v6EgressConfig, { snatSource: '2001:db8::10', randomizeSnat: 'prng' });
  assert.equal(await setupV6EgressNode(kernel, { ...cfg, enabled: false }, log), false);
  assert.equal(kernel.v6EgressConfig, undefined);
  assert.deepEqual(warned, []);
});

test('a node without an IPv6 address serves without IPv6 egress, with a warning, as upstream', async () => {
  const kernel = new FakeKernel();
  const { log, warned } = recorder();
  const on = await setupV6EgressNode(
    kernel,
    { enabled: true, nodeIpv6: undefined, randomizeSnat: 'prng' },
    log,
  );
  assert.equal(on, false);
  assert.equal(kernel.v6EgressConfig, undefined);
  assert.match(warned[0] ?? '', /ENABLE_V6_EGRESS=true but the node's primary ENI has no IPv6 address/);
});

test('a node that does not forward IPv6 is refused, naming the sysctl and the install flag', async () => {
  const kernel = new FakeKernel();
  kernel.sysctls.set('net.ipv6.conf.all.forwarding', '0');
  await assert.rejects(
    setupV6EgressNode(
      kernel,
      { enabled: true, nodeIpv6: '2001:db8::10', randomizeSnat: 'prng' },
      recorder().log,
    ),
    /ENABLE_V6_EGRESS=true needs net\.ipv6\.conf\.all\.forwarding=1 .*\(vpcnetctl install --ipv6-forwarding/,
  );
  assert.equal(kernel.v6EgressConfig, undefined);
});
