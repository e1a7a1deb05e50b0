// Many in-process agents against one emulator: each sends its IMDS requests from its own loopback
// address, and the emulator answers for the instance launched with that address.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { SUBNET_A, startTestEmulator } from '../emulator/testing/test-emulator.ts';
import { ImdsClient } from './imds.ts';

test('IMDS answers for the instance launched with the request source address', async () => {
  const t = await startTestEmulator();
  after(() => t.close());
  const launch = (instanceType: string, imdsSourceAddress: string) =>
    t.emulator.launchInstance({ instanceType, subnetId: SUBNET_A, imdsSourceAddress });
  const a = await launch('m5.large', '127.0.3.1');
  const b = await launch('t3.medium', '127.0.3.2');
  const from = (localAddress: string) => new ImdsClient({ endpoint: t.url, localAddress, attempts: 1 });
  assert.equal(await from('127.0.3.1').get('instance-id'), a.instanceId);
  assert.equal(await from('127.0.3.2').get('instance-id'), b.instanceId);
  assert.equal(await from('127.0.3.2').get('instance-type'), 't3.medium');
  await assert.rejects(
    from('127.0.3.3').get('instance-id'),
    /404/,
    'an address no instance was launched with is nobody',
  );
});
