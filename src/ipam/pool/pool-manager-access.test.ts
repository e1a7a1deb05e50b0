// The pool under upstream's knobs of what it may do: DISABLE_NETWORK_RESOURCE_PROVISIONING (lend
// what is attached, change nothing in EC2) and AWS_MANAGE_ENIS_NON_SCHEDULABLE=false (a cordoned
// node adds and frees nothing until it is schedulable again).
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { MIN_ENI_LIFETIME_MS } from '../enis/eni-registry.ts';
import { attachedDevices, burst, managerFactory, settle } from '../testing/manager-setup.ts';

const { setup, stopAll } = managerFactory();
afterEach(() => stopAll());

/** The fake cloud's calls that would change EC2. */
const MUTATIONS = /^(assign|unassign|createEni|attachEni|setDeleteOnTermination|detachEni|deleteEni)/;

describe('ENI provisioning off (DISABLE_NETWORK_RESOURCE_PROVISIONING)', () => {
  test('the pool lends the addresses already attached and never asks EC2 for more, whatever the targets', async () => {
    const { cloud, manager } = await setup({
      primarySecondaryIps: 2,
      targets: { warmIpTarget: 5, minimumIpTarget: 10 },
      prepare: (c) => {
        c.attachForeignEni({ deviceIndex: 1, secondaryIps: 2 });
      },
      deps: { provisioning: false },
    });
    assert.deepEqual(await settle(manager), [], 'no pass changes anything');
    const got = ['a', 'b', 'c', 'd'].map((p) => manager.allocate(`vpcnet/${p}/eth0`)?.ip);
    assert.equal(new Set(got).size, 4, 'the four attached addresses are lent');
    assert.equal(manager.allocate('vpcnet/e/eth0'), undefined);
    assert.deepEqual(await settle(manager), []);
    assert.deepEqual(
      cloud.calls.filter((c) => MUTATIONS.test(c)),
      [],
    );
    assert.equal(manager.health().provisioning, false);
    await assert.rejects(
      manager.waitForAddress(1),
      /ENI provisioning is off: the pool lends only what is attached/,
    );
  });

  test('the same node with provisioning on grows (the knob is what holds it)', async () => {
    const { cloud, manager } = await setup({ primarySecondaryIps: 2, targets: { warmIpTarget: 5 } });
    assert.ok((await settle(manager)).length > 0);
    assert.ok(cloud.calls.some((c) => MUTATIONS.test(c)));
    assert.equal(manager.health().provisioning, true);
  });
});

describe('a cordoned node (AWS_MANAGE_ENIS_NON_SCHEDULABLE=false)', () => {
  test('while the node is unschedulable no address or ENI is added, and the growth says why; once it is schedulable the pool grows', async () => {
    let cordoned = true;
    const { cloud, manager } = await setup({
      targets: { warmIpTarget: 2 },
      deps: { nodeUnschedulable: async () => cordoned },
    });
    assert.deepEqual(await settle(manager), []);
    assert.deepEqual(
      cloud.calls.filter((c) => MUTATIONS.test(c)),
      [],
    );
    manager.start();
    await waitFor(() => manager.health().growth.blocked !== null);
    assert.match(
      String(manager.health().growth.blocked),
      /the node is unschedulable \(taint node\.kubernetes\.io\/unschedulable:NoSchedule\)/,
    );
    await assert.rejects(manager.waitForAddress(1), /the node is unschedulable/);
    cordoned = false;
    await waitFor(() => manager.allocate('vpcnet/a/eth0') !== undefined);
    assert.equal(manager.health().growth.blocked, null);
    assert.ok(cloud.calls.some((c) => c.startsWith('assignPrivateIps')));
  });

  test('no idle ENI is freed while the node is unschedulable', async () => {
    let cordoned = false;
    const { cloud, manager, clock } = await setup({
      targets: { warmIpTarget: 1 },
      deps: { nodeUnschedulable: async () => cordoned },
    });
    const ips = await burst(manager, 7);
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    for (const ip of ips) manager.release(ip);
    clock.t += MIN_ENI_LIFETIME_MS;
    cordoned = true;
    assert.ok(!(await settle(manager)).includes('freeEni'));
    assert.deepEqual(attachedDevices(cloud), [0, 1, 2]);
    cordoned = false;
    assert.deepEqual(
      (await settle(manager)).filter((d) => d === 'freeEni'),
      ['freeEni', 'freeEni'],
    );
  });

  test('a node the API cannot answer about counts as schedulable, as upstream', async () => {
    const { cloud, manager, logs } = await setup({
      targets: { warmIpTarget: 2 },
      deps: {
        nodeUnschedulable: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      },
    });
    assert.ok((await settle(manager)).length > 0);
    assert.ok(cloud.calls.some((c) => c.startsWith('assignPrivateIps')));
    assert.ok(logs.some((l) => l.includes('cannot tell whether the node is unschedulable')));
  });
});

async function waitFor(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(ok(), 'timed out');
}
