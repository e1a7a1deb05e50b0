import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RecentCloudErrors } from './cloud-errors.ts';

test('the last 20 EC2 errors are kept, newest first, with time, action, code and message; successes are not', () => {
  let t = Date.parse('2026-11-30T10:00:00Z');
  const errors = new RecentCloudErrors(() => t);
  for (let i = 0; i < 25; i++) {
    t += 1000;
    errors.record({
      action: 'AssignPrivateIpAddresses',
      ms: 5,
      error: { code: `Code${i}`, message: `failure ${i}`, throttled: false },
    });
    errors.record({ action: 'DescribeNetworkInterfaces', ms: 5 });
  }
  const list = errors.list();
  assert.equal(list.length, 20);
  assert.deepEqual(list[0], {
    time: '2026-11-30T10:00:25.000Z',
    action: 'AssignPrivateIpAddresses',
    code: 'Code24',
    message: 'failure 24',
  });
  assert.equal(list[19]?.code, 'Code5', 'the oldest kept is the 20th newest');
});
