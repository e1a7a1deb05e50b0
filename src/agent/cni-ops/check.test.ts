import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CNI_ERR_CHECK_DRIFT, CNI_ERR_CONTAINER_UNKNOWN, CniError } from '../../cni/errors.ts';
import { Dataplane } from '../../dataplane/dataplane.ts';
import type { Resource } from '../../plan/resource.ts';
import { attachRequest, listPool, opContext } from '../testing/op-context.ts';
import { addAttachment } from './add.ts';
import { checkAttachment } from './check.ts';

test('CHECK passes on a healthy attachment and reports drift with code 110, naming each missing piece', async () => {
  const ctx = await opContext(listPool(['10.0.1.5']));
  const req = attachRequest('c1', '/var/run/netns/p1');
  await addAttachment(ctx, req);
  await checkAttachment(ctx, req);
  ctx.kernel.deleteRule({ priority: 512, to: '10.0.1.5/32', table: 254 });
  ctx.kernel.deleteAddress('/var/run/netns/p1', 'eth0', '10.0.1.5/32');
  await assert.rejects(checkAttachment(ctx, req), (err: unknown) => {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, CNI_ERR_CHECK_DRIFT);
    assert.match(err.details ?? '', /address 10\.0\.1\.5\/32 missing on eth0/);
    assert.match(err.details ?? '', /rule to 10\.0\.1\.5 lookup main prio 512 missing/);
    return true;
  });
});

test('CHECK fails when prevResult names another address, when the pod netns is gone, and for an unknown attachment', async () => {
  const ctx = await opContext(listPool(['10.0.1.5']));
  const req = attachRequest('c1', '/var/run/netns/p1');
  await addAttachment(ctx, req);
  await assert.rejects(
    checkAttachment(ctx, { ...req, prevResultIps: ['10.0.1.9'] }),
    (err: unknown) =>
      err instanceof CniError && err.code === CNI_ERR_CHECK_DRIFT && /10\.0\.1\.9/.test(err.details ?? ''),
  );
  ctx.kernel.deleteNetns('/var/run/netns/p1');
  await assert.rejects(
    checkAttachment(ctx, req),
    (err: unknown) => err instanceof CniError && /unreachable/.test(err.details ?? ''),
  );
  await assert.rejects(
    checkAttachment(ctx, attachRequest('other', '/var/run/netns/p2')),
    (err: unknown) => err instanceof CniError && err.code === CNI_ERR_CONTAINER_UNKNOWN,
  );
});

test('CHECK of an attachment whose address is on an ENI EC2 no longer lists fails naming the ENI', async () => {
  const lost = new Map<string, { since: number }>();
  const ctx = await opContext({ ...listPool(['10.0.1.5']), lostEni: (eniId) => lost.get(eniId) });
  const req = attachRequest('c1', '/var/run/netns/p1');
  await addAttachment(ctx, req);
  await checkAttachment(ctx, req);
  lost.set('eni-1', { since: Date.UTC(2024, 0, 1) });
  await assert.rejects(checkAttachment(ctx, req), (err: unknown) => {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, CNI_ERR_CHECK_DRIFT);
    assert.match(
      err.details ?? '',
      /address 10\.0\.1\.5 is on ENI eni-1, which EC2 no longer lists as attached to this node \(since 2024-01-01T00:00:00\.000Z\)/,
    );
    return true;
  });
});

/** A dataplane whose create does its work and then reports a failure, and whose remove fails. */
class UnfinishedDataplane extends Dataplane {
  override async create(netns: string, resources: readonly Resource[]): Promise<void> {
    await super.create(netns, resources);
    throw new Error('netlink: timed out waiting for an answer');
  }
  override async remove(): Promise<void> {
    throw new Error('netlink: helper gone');
  }
}

test('CHECK fails for an attachment whose ADD never finished, even when its kernel state is whole', async () => {
  const base = await opContext(listPool(['10.0.1.5']));
  const ctx = { ...base, dataplane: new UnfinishedDataplane(base.kernel) };
  const req = attachRequest('c1', '/var/run/netns/p1');
  await assert.rejects(addAttachment(ctx, req), /timed out/);
  // What the failed ADD could not undo stays recorded, as an ADD in progress, for DEL or recovery.
  assert.equal(ctx.ledger.get(req.key)?.phase, 'adding');
  const whole = await base.dataplane.inspect(req.netns ?? '', ctx.ledger.get(req.key)?.resources ?? []);
  assert.deepEqual(whole.findings, [], 'the kernel has all of it');
  await assert.rejects(checkAttachment(ctx, req), (err: unknown) => {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, CNI_ERR_CONTAINER_UNKNOWN);
    return true;
  });
});
