// The agent's one look at a CNI_NETNS path (src/agent/cni-ops/netns-inspection.ts) on what runtimes
// actually hand it: a bind mount of a namespace, whose /proc/self/fd link is its path and names no
// namespace kind. The look must vouch for it as the careful checks do, without taking them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspectNetns } from '../../src/agent/cni-ops/netns-inspection.ts';
import { notANetworkNamespace } from '../../src/agent/cni-ops/pod-netns.ts';
import { netnsIdentity } from '../../src/dataplane/netns-identity.ts';
import { netnsPath, withNetnsCleanup } from '../netns-fixture.ts';

test('a bind-mounted network namespace is vouched for by one look, as the careful checks would', async () => {
  await withNetnsCleanup(async (create) => {
    const path = netnsPath(await create('vpinsp-'));
    assert.equal(await notANetworkNamespace(path), undefined, 'the careful checks accept it');
    const seen = await inspectNetns(path, async () => {
      throw new Error('the careful way was taken');
    });
    assert.deepEqual(seen, { exists: true, notNetns: undefined, identity: await netnsIdentity(path) });
  });
});
