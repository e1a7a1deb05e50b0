import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tcpEarlyDemuxProblem } from './tcp-early-demux.ts';
import { FakeKernel } from './testing/fake-kernel.ts';

test('asked off and still on, the node gets a problem naming the sysctl and the fix; off, or not asked, none', async () => {
  const kernel = new FakeKernel();
  kernel.sysctls.set('net.ipv4.tcp_early_demux', '1');
  assert.equal(await tcpEarlyDemuxProblem(kernel, false), undefined);
  assert.match(
    (await tcpEarlyDemuxProblem(kernel, true)) ?? '',
    /^DISABLE_TCP_EARLY_DEMUX=true but net\.ipv4\.tcp_early_demux is 1 .*\(vpcnetctl install --disable-tcp-early-demux\)/,
  );
  kernel.sysctls.set('net.ipv4.tcp_early_demux', '0');
  assert.equal(await tcpEarlyDemuxProblem(kernel, true), undefined);
  // A kernel without the sysctl has nothing to turn off.
  kernel.sysctls.delete('net.ipv4.tcp_early_demux');
  assert.equal(await tcpEarlyDemuxProblem(kernel, true), undefined);
});
