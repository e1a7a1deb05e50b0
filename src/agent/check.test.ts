import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CNI_ERR_CHECK_DRIFT, CNI_ERR_CONTAINER_UNKNOWN, CniError } from '../cni/errors.ts';
import { addAttachment } from './add.ts';
import { checkAttachment } from './check.ts';
import { attachRequest, listPool, opContext } from './testing/op-context.ts';

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
