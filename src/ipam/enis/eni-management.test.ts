// The pool of a node with MANAGE_UNTAGGED_ENI=false: which attached ENIs it uses, in upstream's
// order (ipamd's setUnmanagedENIs; the rule itself is eni-ownership.ts's, tested beside it).
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { managerFactory } from '../testing/manager-setup.ts';
import { INSTANCE_ID_TAG as INSTANCE, NO_MANAGE_TAG as NO_MANAGE } from './eni-ownership.ts';

const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

describe('MANAGE_UNTAGGED_ENI and the no_manage tag', () => {
  test('the pool of a node with MANAGE_UNTAGGED_ENI=false lends the primary ENI and its own tagged ENIs only', async () => {
    const { pool, manager } = await setup({
      primarySecondaryIps: 1,
      limits: { maxEnis: 5, ipsPerEni: 4 },
      prepare: (cloud) => {
        const self = cloud.meta.instanceId;
        cloud.attachForeignEni({ deviceIndex: 1, secondaryIps: 2 });
        cloud.attachForeignEni({ deviceIndex: 2, secondaryIps: 2, tags: { [INSTANCE]: self } });
        cloud.attachForeignEni({ deviceIndex: 3, secondaryIps: 2, tags: { [NO_MANAGE]: 'false' } });
        const primary = cloud.enis.get('eni-primary');
        if (primary) cloud.enis.set('eni-primary', { ...primary, tags: { [NO_MANAGE]: 'true' } });
      },
      deps: { manageUntaggedEnis: false },
    });
    assert.deepEqual(
      manager.enis().map((e) => [e.eni?.deviceNumber, e.state, e.unmanagedReason]),
      [
        [0, 'ready', undefined],
        [1, 'unmanaged', `not tagged ${INSTANCE}=i-0fake (MANAGE_UNTAGGED_ENI=false)`],
        [2, 'ready', undefined],
        [3, 'ready', undefined],
      ],
    );
    assert.deepEqual(
      pool.enis().map((e) => e.deviceNumber),
      [0, 2, 3],
    );
  });
});
