import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Cloud, CloudError } from '../../cloud/cloud.ts';
import { ReadOnlyCloud } from '../../cloud/restricted-cloud.ts';
import { ipv6CidrContains, parseIpv6, parseIpv6Cidr } from '../../infra/ipv6-cidr.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { MemoryPoolLedger } from '../testing/memory-pool-ledger.ts';
import { Ipv6PrefixPool } from './ipv6-prefix-pool.ts';

const COOLDOWN_MS = 30_000;
const quiet = { info() {}, warn() {}, error() {} };

function node(cloud = new FakeCloud({ ipv6Subnet: '2001:db8:5e00:0' })) {
  const clock = { t: 1_000_000, now: () => clock.t };
  const ledger = new MemoryPoolLedger();
  const poolOn = (c: Cloud = cloud) =>
    new Ipv6PrefixPool({
      cloud: c,
      instanceId: cloud.meta.instanceId,
      subnetId: cloud.meta.subnetId,
      subnetIpv6Cidrs: cloud.meta.subnetIpv6Cidrs,
      ledger,
      clock,
      cooldownMs: COOLDOWN_MS,
      log: quiet,
    });
  return { cloud, clock, ledger, poolOn };
}

const assigns = (cloud: FakeCloud) => cloud.calls.filter((c) => c.startsWith('assignIpv6Prefixes')).length;
const primaryPrefixes = (cloud: FakeCloud) => cloud.enis.get('eni-primary')?.ipv6Prefixes ?? [];

test('start assigns one /80 to the primary ENI and pods get canonical addresses out of it', async () => {
  const { cloud, poolOn } = node();
  const pool = poolOn();
  await pool.start();
  assert.deepEqual(primaryPrefixes(cloud), [pool.prefix]);
  const cidr = parseIpv6Cidr(pool.prefix!);
  const a = pool.allocate('pod-a');
  const b = pool.allocate('pod-b');
  assert.ok(a && b);
  assert.notEqual(a.ip, b.ip);
  for (const got of [a, b]) {
    assert.ok(ipv6CidrContains(cidr, parseIpv6(got.ip)));
    assert.notEqual(parseIpv6(got.ip), cidr.base, "never the /80's first address");
    assert.equal(got.eniId, 'eni-primary');
    assert.equal(got.routeTable, 254);
  }
  assert.equal(a.ip, '2001:db8:5e00:0:1::1');
  assert.equal(pool.allocate('pod-a')?.ip, a.ip, 'the same owner gets the address it holds');
  assert.deepEqual(pool.view(), {
    mode: 'ipv6-prefix',
    prefix: pool.prefix,
    eniId: 'eni-primary',
    assigned: 2,
    cooling: 0,
    problem: null,
  });
});

test('a restarted source adopts the /80 and never hands out an address the ledger says a pod holds', async () => {
  const { cloud, ledger, poolOn } = node();
  const first = poolOn();
  await first.start();
  const held = [first.allocate('pod-a')!, first.allocate('pod-b')!];
  ledger.hold('pod-a', held[0]!.ip);
  ledger.hold('pod-b', held[1]!.ip);
  const again = poolOn();
  await again.start();
  assert.equal(assigns(cloud), 1, 'no second AssignIpv6Addresses');
  assert.equal(again.prefix, first.prefix);
  assert.equal(again.view().assigned, 2);
  const fresh = Array.from({ length: 5 }, (_, i) => again.allocate(`pod-${i + 10}`)?.ip);
  for (const h of held) assert.ok(!fresh.includes(h.ip), `${h.ip} is still a pod's`);
});

test('a freed address cools down, also across a restart, and is handed out again after', async () => {
  const { clock, ledger, poolOn } = node();
  const first = poolOn();
  await first.start();
  const a = first.allocate('pod-a')!;
  first.release(a.ip, a.eniId);
  assert.deepEqual(
    ledger.coolingAddresses().map((c) => c.ip),
    [a.ip],
  );
  // A restart starts its walk from the /80's start again: the cooling record keeps a.ip back.
  const again = poolOn();
  await again.start();
  assert.notEqual(again.allocate('pod-b')?.ip, a.ip);
  assert.equal(again.view().cooling, 1);
  clock.t += COOLDOWN_MS;
  const third = poolOn();
  await third.start();
  assert.equal(third.allocate('pod-c')?.ip, a.ip);
  assert.deepEqual(ledger.coolingAddresses(), []);
});

test('a lost AssignIpv6Addresses reply leaves one /80: the describe after it adopts what EC2 did', async () => {
  const { cloud, poolOn } = node();
  const lossy = new Proxy(cloud, {
    get(target, name) {
      if (name === 'assignIpv6Prefixes') {
        return async (eniId: string, count: number) => {
          await target.assignIpv6Prefixes(eniId, count);
          throw new CloudError('socket hang up', 'NetworkingError', true);
        };
      }
      const member: unknown = Reflect.get(target, name);
      return typeof member === 'function' ? member.bind(target) : member;
    },
  });
  const pool = poolOn(lossy);
  await pool.start();
  assert.equal(primaryPrefixes(cloud).length, 1);
  assert.equal(pool.prefix, primaryPrefixes(cloud)[0]);
  assert.ok(pool.allocate('pod-a'));
});

test('spare /80s from an earlier lost reply go back; the one pods hold addresses of stays', async () => {
  const { cloud, ledger, poolOn } = node();
  const [spare, used] = await cloud.assignIpv6Prefixes('eni-primary', 2);
  ledger.hold('pod-a', used!.replace('::/80', '::7'));
  const pool = poolOn();
  await pool.start();
  assert.equal(pool.prefix, used);
  assert.deepEqual(primaryPrefixes(cloud), [used]);
  assert.ok(cloud.calls.includes(`unassignIpv6Prefixes eni-primary ${spare}`));
});

test('a subnet without IPv6 makes no EC2 call and fails pods with the reason', async () => {
  const { cloud, poolOn } = node(new FakeCloud());
  const pool = poolOn();
  await pool.start();
  assert.equal(assigns(cloud), 0);
  assert.equal(pool.allocate('pod-a'), undefined);
  await assert.rejects(
    pool.waitForAddress(1000),
    /subnet subnet-1 of the primary ENI has no IPv6 CIDR block/,
  );
  assert.match(pool.view().problem ?? '', /ENABLE_IPv6=true needs a dual-stack subnet/);
});

test('a failed claim is tried again when a pod waits, and the pod then gets an address', async () => {
  const { cloud, poolOn } = node();
  cloud.failNext('describeInstanceEnis');
  const pool = poolOn();
  await pool.start();
  assert.match(pool.view().problem ?? '', /cannot read the primary ENI from EC2: .*Request limit exceeded/);
  assert.equal(pool.allocate('pod-a'), undefined);
  await pool.waitForAddress(10_000);
  assert.equal(pool.view().problem, null);
  assert.ok(pool.allocate('pod-a'));
  assert.equal(primaryPrefixes(cloud).length, 1);
});

test('cooldowns that ended leave memory and the ledger when the next address is freed, though the walk never comes back to them', async () => {
  const { clock, ledger, poolOn } = node();
  const pool = poolOn();
  await pool.start();
  const old = [pool.allocate('pod-a')!, pool.allocate('pod-b')!];
  for (const a of old) pool.release(a.ip, a.eniId);
  assert.equal(ledger.coolingAddresses().length, 2);
  clock.t += COOLDOWN_MS;
  const c = pool.allocate('pod-c')!;
  pool.release(c.ip, c.eniId);
  assert.deepEqual(
    ledger.coolingAddresses().map((r) => r.ip),
    [c.ip],
  );
});

test('without provisioning (DISABLE_NETWORK_RESOURCE_PROVISIONING) a /80 already on the ENI serves; none is assigned, and the reason is stated', async () => {
  const { cloud, poolOn } = node();
  const refused = poolOn(new ReadOnlyCloud(cloud));
  await refused.start();
  assert.equal(refused.prefix, undefined);
  assert.equal(assigns(cloud), 0);
  assert.match(
    String(refused.view().problem),
    /DISABLE_NETWORK_RESOURCE_PROVISIONING=true: .*AssignIpv6Addresses not sent/,
  );
  await poolOn().start(); // someone else assigns the /80 ...
  const readOnly = poolOn(new ReadOnlyCloud(cloud));
  await readOnly.start(); // ... which the node then adopts without changing anything
  assert.deepEqual(primaryPrefixes(cloud), [readOnly.prefix]);
  assert.equal(assigns(cloud), 1);
  assert.ok(readOnly.allocate('pod-a'));
});
