// kill -9 at each step of creating/attaching and detaching/deleting an ENI: a new pool manager on
// the same ledger store and cloud finishes the work, lends no address of an ENI being freed, and
// leaves no ENI of the node detached.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CloudError } from '../../cloud/cloud.ts';
import { settle } from '../testing/manager-setup.ts';
import { type Incarnation, type KillableCall, RestartableNode } from '../testing/restartable-node.ts';
import { CREATED_BY_TAG, CREATED_BY_VPCNET, INSTANCE_ID_TAG } from './eni-ownership.ts';
import { MIN_ENI_LIFETIME_MS } from './eni-registry.ts';
import { CREATE_IN_DOUBT_EVERY_MS, CREATE_IN_DOUBT_LOOK_MS } from './leaked-enis.ts';

/** The pool wants a second ENI at once: the primary holds 3 addresses, 5 are wanted free. */
function growingNode(): RestartableNode {
  return new RestartableNode({ primarySecondaryIps: 3, targets: { warmIpTarget: 5 } });
}

/** A vpcnet ENI (eni-0001, device 1, two idle addresses) that the pool frees once it is a minute old. */
function shrinkingNode(): RestartableNode {
  const node = new RestartableNode({ primarySecondaryIps: 3, targets: { warmIpTarget: 1 } });
  node.cloud.attachForeignEni({
    deviceIndex: 1,
    tags: { [CREATED_BY_TAG]: CREATED_BY_VPCNET, [INSTANCE_ID_TAG]: node.cloud.meta.instanceId },
    secondaryIps: 2,
  });
  return node;
}

function recorded(agent: Incarnation): string[] {
  return agent.ledger.pendingEnis().map((p) => `${p.eniId} ${p.step}`);
}

async function durableRecords(node: RestartableNode): Promise<string[]> {
  const snap = await node.store.load();
  return (snap?.pendingEnis ?? []).map((p) => `${p.eniId} ${p.step}`);
}

/** Starts the free of eni-0001 and kills the agent at `step`. */
async function killWhileFreeing(node: RestartableNode, step: 'teardown' | KillableCall, applied = false) {
  const first = await node.start();
  node.clock.t += MIN_ENI_LIFETIME_MS;
  const reached = step === 'teardown' ? node.killDuringTeardown() : node.killDuring(step, applied);
  void first.manager.runPass();
  await reached;
}

describe('a kill -9 while vpcnet creates and attaches an ENI leaks nothing', () => {
  test('killed while writing the attaching record (ENI created, only its creation durable): the restart deletes it at once', async () => {
    const node = growingNode();
    const first = await node.start();
    const reached = node.store.hangNextWrite(1); // the creation's record is written; the attaching one hangs
    void first.manager.runPass();
    await reached;
    assert.deepEqual(node.detachedEnis(), ['eni-0001'], 'created, tagged, not attached');
    assert.deepEqual(await durableRecords(node), [], 'no record of the ENI itself');
    assert.equal((await node.store.load())?.eniCreates?.length, 1, 'its creation is recorded');

    const second = await node.start();
    await second.manager.runPass();
    assert.ok(!node.cloud.enis.has('eni-0001'), 'deleted without waiting for the sweep’s grace');
    assert.deepEqual(second.ledger.eniCreates(), [], 'the creation’s record goes with it');
    await settle(second.manager);
    assert.deepEqual(node.detachedEnis(), []);
    assert.equal(second.manager.eniCleanup().leakedEnisDeleted, 0, 'the ledger, not the sweep, found it');
    assert.ok(
      second.logs.some(
        (l) => l.includes('deleted the ENI of an interrupted creation') && l.includes('eni-0001'),
      ),
    );
  });

  test('killed during CreateNetworkInterface after EC2 made the ENI: the restart deletes it at once', async () => {
    const node = growingNode();
    const first = await node.start();
    const reached = node.killDuring('createEni', true);
    void first.manager.runPass();
    await reached;
    assert.deepEqual(node.detachedEnis(), ['eni-0001']);
    assert.equal((await node.store.load())?.eniCreates?.length, 1, 'recorded before EC2 was asked');

    const second = await node.start();
    await second.manager.runPass();
    assert.ok(!node.cloud.enis.has('eni-0001'));
    assert.deepEqual(second.ledger.eniCreates(), []);
    await settle(second.manager);
    assert.deepEqual(node.detachedEnis(), []);
  });

  test('killed during CreateNetworkInterface before EC2 made it: nothing to delete; the record goes after the look', async () => {
    const node = growingNode();
    const first = await node.start();
    const reached = node.killDuring('createEni', false);
    void first.manager.runPass();
    await reached;
    assert.equal((await node.store.load())?.eniCreates?.length, 1);

    const second = await node.start();
    await second.manager.runPass();
    assert.equal(second.ledger.eniCreates().length, 1, 'looked for while EC2’s describes may lag');
    node.clock.t += CREATE_IN_DOUBT_LOOK_MS;
    await second.manager.runPass();
    assert.deepEqual(second.ledger.eniCreates(), []);
    await settle(second.manager);
    assert.deepEqual(node.detachedEnis(), []);
    assert.ok(!node.cloud.calls.some((c) => c.startsWith('deleteEni')), 'nothing of vpcnet’s was deleted');
  });

  test('killed during AttachNetworkInterface before it took effect: the record is durable, and the restart deletes the ENI at once', async () => {
    const node = growingNode();
    const first = await node.start();
    const reached = node.killDuring('attachEni', false);
    void first.manager.runPass();
    await reached;
    assert.deepEqual(await durableRecords(node), ['eni-0001 attaching'], 'recorded before the attach');

    const second = await node.start();
    assert.deepEqual(recorded(second), ['eni-0001 deleting']);
    await second.manager.runPass();
    assert.ok(!node.cloud.enis.has('eni-0001'), 'deleted without waiting for the sweep’s grace');
    assert.deepEqual(recorded(second), [], 'the record goes once EC2 says the ENI is gone');
    await settle(second.manager);
    assert.deepEqual(node.detachedEnis(), []);
    assert.equal(second.manager.eniCleanup().leakedEnisDeleted, 0, 'the ledger, not the sweep, found it');
  });

  test('killed after the attach took effect, before the ENI was registered: the restart adopts it into the pool', async () => {
    const node = growingNode();
    const first = await node.start();
    const reached = node.killDuring('attachEni', true);
    void first.manager.runPass();
    await reached;
    assert.deepEqual(await durableRecords(node), ['eni-0001 attaching']);

    const second = await node.start();
    assert.deepEqual(recorded(second), [], 'attached: nothing left to finish');
    assert.equal(
      second.manager.enis().find((e) => e.eniId === 'eni-0001')?.state,
      'ready',
      'adopted with its link configured',
    );
    assert.deepEqual(second.linked, ['eni-0001']);
    await settle(second.manager);
    assert.ok(!node.cloud.calls.includes('deleteEni eni-0001'));
    assert.equal(
      node.cloud.enis.get('eni-0001')?.attachment?.deleteOnTermination,
      true,
      'it still goes away with the instance',
    );
    assert.deepEqual(node.detachedEnis(), []);
  });
});

describe('a kill -9 while vpcnet frees an ENI leaks nothing and lends none of its addresses', () => {
  test('killed during the link teardown: the detaching record is durable; the restart keeps the ENI out of the pool, detaches and deletes it', async () => {
    const node = shrinkingNode();
    await killWhileFreeing(node, 'teardown');
    assert.deepEqual(
      await durableRecords(node),
      ['eni-0001 detaching'],
      'recorded before teardown and detach',
    );
    const addresses = node.cloud.enis.get('eni-0001')?.secondaryIps ?? [];

    const second = await node.start();
    assert.equal(second.pool.eni('eni-0001'), undefined, 'an ENI being freed does not rejoin the pool');
    for (const ip of addresses) assert.equal(second.pool.state(ip), undefined, `${ip} is not lent`);
    assert.deepEqual(second.linked, [], 'its link is not set up again');
    await second.manager.runPass();
    assert.deepEqual(second.tornDown, ['eni-0001'], 'its link is torn down before the detach');
    assert.ok(!node.cloud.enis.has('eni-0001'));
    assert.deepEqual(recorded(second), []);
    assert.deepEqual(
      node.cloud.calls.filter((c) => /^(detachEni|deleteEni) .*0001/.test(c)),
      ['detachEni attach-eni-0001', 'deleteEni eni-0001'],
    );
  });

  test('killed after DetachNetworkInterface took effect: the restart’s detach finds it detached and deletes it', async () => {
    const node = shrinkingNode();
    await killWhileFreeing(node, 'detachEni', true);
    assert.deepEqual(node.detachedEnis(), ['eni-0001'], 'detached, not deleted: a leak without the ledger');
    assert.deepEqual(await durableRecords(node), ['eni-0001 detaching']);

    const second = await node.start();
    await second.manager.runPass();
    assert.ok(!node.cloud.enis.has('eni-0001'));
    assert.deepEqual(recorded(second), []);
  });

  test('killed during DeleteNetworkInterface before it took effect: the restart deletes the ENI', async () => {
    const node = shrinkingNode();
    await killWhileFreeing(node, 'deleteEni', false);
    assert.deepEqual(await durableRecords(node), ['eni-0001 deleting']);

    const second = await node.start();
    assert.deepEqual(
      second.manager.enis().map((e) => [e.eniId, e.state]),
      [
        ['eni-primary', 'ready'],
        ['eni-0001', 'deletePending'],
      ],
    );
    await second.manager.runPass();
    assert.ok(!node.cloud.enis.has('eni-0001'));
    assert.deepEqual(recorded(second), []);
  });

  test('killed after the delete took effect: the restart’s delete hears NotFound and drops the record', async () => {
    const node = shrinkingNode();
    await killWhileFreeing(node, 'deleteEni', true);
    assert.deepEqual(await durableRecords(node), ['eni-0001 deleting']);
    assert.ok(!node.cloud.enis.has('eni-0001'));

    const second = await node.start();
    await second.manager.runPass();
    assert.deepEqual(recorded(second), [], 'InvalidNetworkInterfaceID.NotFound means done');
    assert.deepEqual(
      second.manager.enis().map((e) => e.eniId),
      ['eni-primary'],
    );
  });

  test('a detach that keeps failing after a restart is retried by later passes, never given up', async () => {
    const node = shrinkingNode();
    await killWhileFreeing(node, 'teardown');
    const second = await node.start();
    node.cloud.failNext('detachEni', undefined, 2);
    await second.manager.runPass();
    await second.manager.runPass();
    assert.deepEqual(recorded(second), ['eni-0001 detaching']);
    assert.ok(node.cloud.enis.get('eni-0001')?.attachment, 'still attached after two throttled detaches');
    await second.manager.runPass();
    assert.ok(!node.cloud.enis.has('eni-0001'));
    assert.deepEqual(recorded(second), []);
  });
});

describe('a CreateNetworkInterface that fails leaves no ENI behind', () => {
  /** The next createEni does its work in EC2, then fails with `err` (a reply lost on the way back). */
  function failAfterMaking(node: RestartableNode, err: Error): void {
    const cloud = node.cloud;
    const original = cloud.createEni;
    cloud.createEni = async (...args: Parameters<typeof original>) => {
      cloud.createEni = original;
      await original.apply(cloud, args);
      throw err;
    };
  }

  test('EC2’s own failure after it made the ENI: the creation stays in doubt, and the next look deletes the ENI', async () => {
    const node = growingNode();
    const agent = await node.start();
    failAfterMaking(node, new CloudError('InternalError: try again', 'InternalError', true));
    await agent.manager.runPass().catch(() => {});
    assert.deepEqual(node.detachedEnis(), ['eni-0001']);
    assert.equal(agent.ledger.eniCreates().length, 1, 'in doubt');
    node.clock.t += CREATE_IN_DOUBT_EVERY_MS;
    await settle(agent.manager);
    assert.ok(!node.cloud.enis.has('eni-0001'), 'deleted within seconds, not after the grace');
    assert.deepEqual(agent.ledger.eniCreates(), []);
    assert.deepEqual(node.detachedEnis(), []);
    assert.ok(node.cloud.attached().length >= 2, 'the pool still grew, with another ENI');
  });

  test('a refusal EC2 answered made nothing: no record stays, nothing is looked for', async () => {
    const node = growingNode();
    const agent = await node.start();
    node.cloud.failNext(
      'createEni',
      new CloudError('no addresses left', 'InsufficientFreeAddressesInSubnet', false),
    );
    await agent.manager.runPass().catch(() => {});
    assert.deepEqual(agent.ledger.eniCreates(), []);
    assert.deepEqual(agent.manager.eniCleanup().pendingEnis, []);
  });
});
