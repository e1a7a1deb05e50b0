// ADD, CHECK and DEL of IPv6 pods (ENABLE_IPv6) with the real ledger and dataplane on the fake
// kernel, and an IPv6 address source standing in for the /80 of the primary ENI.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CNI_ERR_CHECK_DRIFT, CNI_ERR_TRY_AGAIN_LATER, CniError } from '../../cni/errors.ts';
import { formatResult } from '../../cni/result.ts';
import { egressVethName, V4_EGRESS_IF } from '../../plan/ipv6-pod-plan.ts';
import { hostVethName } from '../../plan/names.ts';
import { addAttachment } from '../cni-ops/add.ts';
import { checkAttachment } from '../cni-ops/check.ts';
import { delAttachment } from '../cni-ops/del.ts';
import { EgressAddresses, V4_EGRESS_RANGE } from '../egress-addresses.ts';
import { ipv6Source, PRIMARY_ENI } from '../testing/ipv6-address-source.ts';
import { attachRequest, opContext } from '../testing/op-context.ts';

const IP = '2001:db8:5e00:0:1::5';
const NETNS = '/var/run/netns/p6';

test('ADD of an IPv6 address builds the IPv6 plan, records it and answers with the /128 and fe80::1', async () => {
  const ctx = await opContext(ipv6Source([IP]));
  const req = attachRequest('c1', NETNS);
  const result = await addAttachment(ctx, req);
  assert.deepEqual(result.ips, [{ address: `${IP}/128`, gateway: 'fe80::1', interface: 1 }]);
  assert.deepEqual(result.routes, [{ dst: '::/0', gw: 'fe80::1' }]);
  assert.deepEqual(formatResult(result, '0.4.0').ips?.[0]?.version, '6');
  const att = ctx.ledger.get(req.key);
  assert.deepEqual(
    att?.resources.find((r) => r.kind === 'vpcAddress'),
    { kind: 'vpcAddress', ip: IP, eniId: PRIMARY_ENI },
    'recorded as the contract says the IPv6 source reads it back',
  );
  assert.ok(!att?.resources.some((r) => r.kind === 'rule' || r.kind === 'snat'));
  assert.deepEqual(ctx.kernel.snatElements(), []);
  assert.equal(ctx.kernel.ns().routes[0]?.dst, `${IP}/128`);
  await checkAttachment(ctx, req);
});

test('CHECK of an IPv6 pod reports a missing /128 or gateway neighbour with code 110', async () => {
  const ctx = await opContext(ipv6Source([IP]));
  const req = attachRequest('c1', NETNS);
  await addAttachment(ctx, req);
  ctx.kernel.deleteAddress(NETNS, 'eth0', `${IP}/128`);
  ctx.kernel.deleteRoute('node', IP);
  await assert.rejects(checkAttachment(ctx, req), (err: unknown) => {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, CNI_ERR_CHECK_DRIFT);
    assert.match(err.details ?? '', /address 2001:db8:5e00:0:1::5\/128 missing on eth0/);
    assert.match(err.details ?? '', /host route 2001:db8:5e00:0:1::5 dev vpc\w+ metric 1024 missing/);
    return true;
  });
});

test('DEL of an IPv6 pod removes its veths and route, releases the address at once (no SNAT element to wait for)', async () => {
  const source = ipv6Source([IP]);
  const ctx = await opContext(source, { v4Egress: new EgressAddresses(V4_EGRESS_RANGE) });
  const req = attachRequest('c1', NETNS);
  await addAttachment(ctx, req);
  assert.deepEqual(
    ctx.kernel.veths().sort(),
    [egressVethName(req.key, 'vpc'), hostVethName(req.key, 'vpc')].sort(),
  );
  await delAttachment(ctx, req);
  assert.deepEqual(ctx.kernel.veths(), []);
  assert.deepEqual(ctx.kernel.ns().routes, []);
  assert.deepEqual(source.released, [IP]);
  assert.equal(ctx.ledger.get(req.key), undefined);
});

test('with IPv4 egress, ADD gives v4if0 a node-local address no recorded pod holds; the result lists v4if0 without it', async () => {
  const ctx = await opContext(ipv6Source([IP, '2001:db8:5e00:0:1::6']), {
    v4Egress: new EgressAddresses(V4_EGRESS_RANGE),
  });
  const first = await addAttachment(ctx, attachRequest('c1', NETNS));
  // A restarted agent (a new allocator) reads what the ledger's records hold.
  const restarted = { ...ctx, v4Egress: new EgressAddresses(V4_EGRESS_RANGE) };
  await addAttachment(restarted, attachRequest('c2', '/var/run/netns/p7'));
  const egress = ctx.ledger
    .list()
    .flatMap((a) => a.resources)
    .filter((r) => r.kind === 'ifAddress' && r.dev === V4_EGRESS_IF)
    .map((r) => (r.kind === 'ifAddress' ? r.cidr : ''));
  assert.deepEqual(egress.sort(), ['169.254.172.2/32', '169.254.172.3/32']);
  assert.deepEqual(
    first.interfaces?.map((i) => i.name),
    [
      hostVethName({ network: 'vpcnet', containerId: 'c1', ifName: 'eth0' }, 'vpc'),
      'eth0',
      egressVethName({ network: 'vpcnet', containerId: 'c1', ifName: 'eth0' }, 'vpc'),
      V4_EGRESS_IF,
    ],
  );
  assert.equal(first.ips?.length, 1, 'the node-local IPv4 is no pod IP');
});

test('no free egress address: ADD fails with code 11 naming the range, and the IPv6 address goes back at once', async () => {
  const source = ipv6Source([IP]);
  const ctx = await opContext(source, { v4Egress: { range: V4_EGRESS_RANGE, allocate: () => undefined } });
  await assert.rejects(addAttachment(ctx, attachRequest('c1', NETNS)), (err: unknown) => {
    assert.ok(err instanceof CniError);
    assert.equal(err.code, CNI_ERR_TRY_AGAIN_LATER);
    assert.match(err.message, /no free IPv4 egress address in 169\.254\.172\.0\/22/);
    return true;
  });
  assert.deepEqual(source.unreserved, [IP]);
  assert.deepEqual(ctx.ledger.list(), []);
  assert.deepEqual(ctx.kernel.veths(), []);
});

test('a DEL without record with an IPv6 prevResult address removes the key-named veths and nothing the IPv4 way', async () => {
  const ctx = await opContext(ipv6Source([]));
  await delAttachment(ctx, attachRequest('c9', NETNS, undefined, [IP]));
  assert.ok(!ctx.kernel.ops.some((o) => o.op.op === 'ruleDel' || o.op.op === 'snatDel'));
});
