import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FaultInjector } from '../faults.ts';
import { StaleReadHistory } from '../stale-reads.ts';
import { SUBNET_A, TEST_VPC } from '../testing/test-emulator.ts';
import { IdSource, seededRandom } from '../vpc/ids.ts';
import { VpcState } from '../vpc/state.ts';
import { Imds } from './imds.ts';

test('an IMDS token stops working when its TTL has passed', async () => {
  const ids = new IdSource(seededRandom(9));
  const state = new VpcState(TEST_VPC, ids);
  const { instance } = state.launch({ instanceType: 't3.medium', subnetId: SUBNET_A });
  let now = 1_000_000;
  const imds = new Imds({
    history: new StaleReadHistory(state, () => now),
    ids,
    faults: new FaultInjector(seededRandom(1)),
    fallbackInstance: () => instance.instanceId,
    nowMs: () => now,
  });
  const headers = new Map<string, string>([['x-aws-ec2-metadata-token-ttl-seconds', '10']]);
  const put = await imds.handle({
    method: 'PUT',
    path: '/latest/api/token',
    sourceAddress: '127.0.0.1',
    header: (n) => headers.get(n),
  });
  assert.equal(put.status, 200);
  assert.equal(put.headers['x-aws-ec2-metadata-token-ttl-seconds'], '10');
  const get = () =>
    imds.handle({
      method: 'GET',
      path: '/latest/meta-data/instance-id',
      sourceAddress: '127.0.0.1',
      header: (n) => (n === 'x-aws-ec2-metadata-token' ? put.body : undefined),
    });
  now += 9_999;
  assert.deepEqual([(await get()).status, (await get()).body], [200, instance.instanceId]);
  now += 1;
  assert.equal((await get()).status, 401);
});
