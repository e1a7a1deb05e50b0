import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NetlinkHelper } from './helper-process.ts';

test('a helper program that cannot be started fails the request with the program and the reason', async () => {
  const helper = new NetlinkHelper({ program: '/nonexistent/vpcnet-netlink' });
  await assert.rejects(
    helper.request((id) => `read ${id} node\n`),
    /cannot start \/nonexistent\/vpcnet-netlink: spawn \/nonexistent\/vpcnet-netlink ENOENT/,
  );
  assert.equal(helper.pid, undefined);
  await helper.close();
});

test('a helper that writes something other than answers is ended, and what was in flight fails', async () => {
  // echo prints its arguments and exits: one line that is no answer.
  const helper = new NetlinkHelper({ program: '/bin/echo', nodeNetns: '/run/netns/x' });
  await assert.rejects(
    helper.request((id) => `read ${id} node\n`),
    /netlink helper: (sent an unreadable answer|\/bin\/echo \(pid \d+\) exited with code 0)/,
  );
  await helper.close();
});
