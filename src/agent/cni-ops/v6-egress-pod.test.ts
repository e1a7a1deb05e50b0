// IPv6 egress of IPv4 pods (ENABLE_V6_EGRESS) through the CNI operations on the fake kernel: the
// pod's primary interface gets v6if0 with an address of fd00::ac:0/118 no recorded pod holds, the
// result lists v6if0 without that address, DEL removes both veths, and a range with nothing free
// fails the ADD with code 11, giving the pod's address back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CNI_ERR_TRY_AGAIN_LATER, CniError } from '../../cni/errors.ts';
import { hostVethName } from '../../plan/names.ts';
import { V6_EGRESS_IF, v6EgressVethName } from '../../plan/v6-egress-plan.ts';
import { EgressAddresses, V6_EGRESS_RANGE } from '../egress-addresses.ts';
import { attachRequest, listPool, opContext } from '../testing/op-context.ts';
import { addAttachment } from './add.ts';
import { delAttachment } from './del.ts';

const NETNS = '/var/run/netns/p1';

test("ADD gives the pod's v6if0 an address of fd00::ac:0/118 with a default route via fe80::1; the result lists v6if0 without it", async () => {
  const ctx = await opContext(listPool(['10.0.1.5', '10.0.1.6']), {
    v6Egress: new EgressAddresses(V6_EGRESS_RANGE),
  });
  const req = attachRequest('c1', NETNS);
  const result = await addAttachment(ctx, req);
  const pod = ctx.kernel.ns(NETNS);
  const v6if0 = pod.links.get(V6_EGRESS_IF);
  assert.ok(v6if0, 'v6if0 in the pod');
  assert.deepEqual(
    pod.routes.filter((r) => r.dev === V6_EGRESS_IF && r.dst === 'default').map((r) => r.via),
    ['fe80::1'],
  );
  assert.deepEqual(
    result.interfaces?.map((i) => i.name),
    [hostVethName(req.key, 'vpc'), 'eth0', v6EgressVethName(req.key, 'vpc'), V6_EGRESS_IF],
  );
  assert.deepEqual(
    result.ips?.map((i) => i.address),
    ['10.0.1.5/32'],
    'the node-local IPv6 is no pod IP',
  );
  assert.equal(ctx.kernel.hostRoute('10.0.1.5'), hostVethName(req.key, 'vpc'));
  const egressRoute = ctx.kernel.ns().routes.find((r) => r.dst === 'fd00::ac:2/128');
  assert.equal(egressRoute?.dev, v6EgressVethName(req.key, 'vpc'));
  // A second pod, through a restarted agent's allocator, gets the next one.
  await addAttachment(
    { ...ctx, v6Egress: new EgressAddresses(V6_EGRESS_RANGE) },
    attachRequest('c2', '/var/run/netns/p2'),
  );
  assert.ok(ctx.kernel.ns().routes.some((r) => r.dst === 'fd00::ac:3/128'));

  await delAttachment(ctx, req);
  assert.ok(!ctx.kernel.veths().includes(v6EgressVethName(req.key, 'vpc')));
  assert.ok(!ctx.kernel.ns().routes.some((r) => r.dst === 'fd00::ac:2/128'));
});

test("a pod's other interface gets no IPv6 egress: egress is the pod's, with its primary interface", async () => {
  const ctx = await opContext(listPool(['10.0.1.5']), { v6Egress: new EgressAddresses(V6_EGRESS_RANGE) });
  const req = {
    ...attachRequest('c1', NETNS),
    key: { network: 'vpcnet', containerId: 'c1', ifName: 'net1' },
  };
  await addAttachment(ctx, req);
  assert.equal(ctx.kernel.ns(NETNS).links.get(V6_EGRESS_IF), undefined);
});

test('no free IPv6 egress address: ADD fails with code 11 naming the range, and the pod address goes back', async () => {
  const unreserved: string[] = [];
  const pool = { ...listPool(['10.0.1.5']), unreserve: (ip: string) => void unreserved.push(ip) };
  const ctx = await opContext(pool, { v6Egress: { range: V6_EGRESS_RANGE, allocate: () => undefined } });
  await assert.rejects(addAttachment(ctx, attachRequest('c1', NETNS)), (err: unknown) => {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, CNI_ERR_TRY_AGAIN_LATER);
    assert.match(err.message, /no free IPv6 egress address in fd00::ac:0\/118/);
    assert.match(err.details ?? '', /ENABLE_V6_EGRESS/);
    return true;
  });
  assert.deepEqual(unreserved, ['10.0.1.5']);
  assert.deepEqual(ctx.kernel.veths(), []);
});

test('a DEL without record removes the IPv6 egress veth named after its key too', async () => {
  const ctx = await opContext(listPool([]));
  const req = attachRequest('c9', NETNS);
  await delAttachment(ctx, req);
  assert.ok(
    ctx.kernel.ops.some((o) => o.op.op === 'linkDel' && o.op.dev === v6EgressVethName(req.key, 'vpc')),
    'the key-named v6 egress veth is asked to go',
  );
});
