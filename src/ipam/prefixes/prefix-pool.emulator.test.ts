// The pool manager in prefix mode with the real AWS driver against the in-process emulator: a
// t3.medium filling up to its prefix-mode capacity, the release rules, the fallback to secondary
// IPs on a fragmented subnet and the return to prefixes, and switching modes with pods running.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { Ec2Budget } from '../../cloud/ec2-budget.ts';
import { FixedFleetSignal } from '../../cloud/testing/fixed-fleet-signal.ts';
import { cidrContains, parseCidr, parseIpv4 } from '../../infra/ipv4.ts';
import { Ledger } from '../../ledger/ledger.ts';
import { MemoryLedgerStore } from '../../ledger/testing/memory-store.ts';
import { maxPods } from '../pool/max-pods.ts';
import { AddressPool } from '../pool/pool.ts';
import { PoolManager } from '../pool/pool-manager.ts';
import type { WarmPoolTargets } from '../pool/targets.ts';
import { type EmulatedNode, startEmulatedNode } from '../testing/emulated-node.ts';
import { attachmentFor } from '../testing/manager-setup.ts';
import { prefixAddresses as addressesOf } from './prefixes.ts';

const COOLDOWN_MS = 30_000;
const TARGETS: WarmPoolTargets = { warmEniTarget: 1, cooldownSeconds: 30 };

interface Run {
  readonly manager: PoolManager;
  readonly ledger: Ledger;
  readonly pool: AddressPool;
  readonly logs: string[];
}

const open: EmulatedNode[] = [];
const managers: PoolManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.stop();
  for (const n of open.splice(0)) await n.close();
});

const clock = { t: 1_000_000, now: () => clock.t };

async function node(): Promise<EmulatedNode> {
  const n = await startEmulatedNode({ instanceType: 't3.medium', seed: 11 });
  open.push(n);
  return n;
}

/** A manager on the node; `ledger` carries pods' records over from an earlier manager (a restart). */
async function managerOn(
  n: EmulatedNode,
  prefixDelegation: boolean,
  earlier?: Ledger,
  targets: WarmPoolTargets = TARGETS,
  ec2Budget?: Ec2Budget,
): Promise<Run> {
  const ledger = earlier ?? (await Ledger.open(new MemoryLedgerStore(), clock));
  const metadata = await n.cloud.metadata();
  const pool = new AddressPool({ cooldownMs: COOLDOWN_MS });
  const logs: string[] = [];
  const record = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const manager = new PoolManager({
    cloud: n.cloud,
    pool,
    clock,
    log: { info: record('info'), warn: record('warn'), error: record('error') },
    metadata,
    limits: await n.cloud.instanceTypeLimits(metadata.instanceType),
    targets,
    ledger,
    prefixMode: { enabled: prefixDelegation, warmPrefixTarget: 1, retryBaseMs: 5000, maxRetryMs: 60_000 },
    minEniLifetimeMs: 0,
    ...(ec2Budget === undefined ? {} : { ec2Budget }),
  });
  managers.push(manager);
  await manager.init();
  return { manager, ledger, pool, logs };
}

/**
 * The EC2 budget of an agent in a 1,000-node fleet whose release turn is minutes away: a surplus
 * waits for it, a mode's clean-up does not (the pool cannot grow in its mode until that is done).
 */
function fleetBudget(): Ec2Budget {
  const fleet = new FixedFleetSignal(clock.now);
  fleet.paceMs.set('UnassignPrivateIpAddresses', 400_000);
  fleet.paceMs.set('UnassignIpv4Prefixes', 400_000);
  const sleep = () => Promise.resolve();
  // A phase of 0.99: the next turn is ~396 s away.
  return new Ec2Budget({
    ceiling: { qps: 10, burst: 20 },
    clock: { now: clock.now, sleep },
    random: () => 0.99,
    fleet,
  });
}

async function settle(manager: PoolManager): Promise<void> {
  for (let i = 0; i < 40; i++) if ((await manager.runPass()).kind === 'none') return;
  throw new Error('pool did not settle');
}

/** Pods p<from>… start one by one (the pool settling in between), each recorded in the ledger. */
async function startPods({ manager, ledger }: Run, from: number, count: number): Promise<string[]> {
  const ips: string[] = [];
  for (let i = from; i < from + count; i++) {
    await settle(manager);
    const got = manager.allocate(`vpcnet/p${i}/eth0`);
    assert.ok(got, `pod ${i} got no address`);
    ledger.put(attachmentFor(`p${i}`, got.ip, got.eniId));
    ips.push(got.ip);
  }
  await settle(manager);
  return ips;
}

interface EniTruth {
  readonly eniId: string;
  readonly secondaryIps: string[];
  readonly ipv4Prefixes: string[];
  readonly attachment: { readonly instanceId: string } | null;
}

async function truth(n: EmulatedNode): Promise<EniTruth[]> {
  const state = (await (await fetch(`${n.url}/admin/state`)).json()) as { enis: EniTruth[] };
  return state.enis.filter((e) => e.attachment !== null);
}

function inPrefixes(ip: string, enis: readonly EniTruth[]): boolean {
  return enis.some((e) => e.ipv4Prefixes.some((p) => cidrContains(parseCidr(p), parseIpv4(ip))));
}

async function fragmentation(n: EmulatedNode, method: 'POST' | 'DELETE'): Promise<void> {
  const res = await fetch(`${n.url}/admin/subnets/subnet-0ipam/fragmentation`, { method });
  assert.equal(res.status, 200);
}

test('a t3.medium in prefix mode holds its prefix-mode maximum of pods (110), every address in a delegated /28', async () => {
  const n = await node();
  const run = await managerOn(n, true);
  const max = maxPods({ maxEnis: 3, ipsPerEni: 6 }, { prefixDelegation: true, vcpus: 2 });
  assert.equal(max, 110);
  // Two of the 110 are host-network pods, as in upstream's formula: 108 take pool addresses.
  const ips = await startPods(run, 0, max - 2);
  assert.equal(new Set(ips).size, ips.length, 'no address handed out twice');
  const enis = await truth(n);
  for (const ip of ips) assert.ok(inPrefixes(ip, enis), `${ip} is in a delegated prefix`);
  const prefixes = enis.flatMap((e) => e.ipv4Prefixes);
  // 108 addresses fill 7 prefixes; WARM_PREFIX_TARGET=1 keeps one more wholly free.
  assert.equal(prefixes.length, 8);
  assert.deepEqual(
    enis.map((e) => e.secondaryIps.length),
    enis.map(() => 0),
    'no secondary IPs in prefix mode',
  );
});

test('a prefix goes back only once none of its addresses is assigned or cooling, down to WARM_PREFIX_TARGET', async () => {
  const n = await node();
  const run = await managerOn(n, true);
  const { manager } = run;
  const ips = await startPods(run, 0, 20);
  assert.equal((await truth(n)).flatMap((e) => e.ipv4Prefixes).length, 3);
  for (const ip of ips.slice(16)) manager.release(ip);
  await settle(manager);
  assert.equal(
    (await truth(n)).flatMap((e) => e.ipv4Prefixes).length,
    3,
    'cooling addresses keep their prefix',
  );
  clock.t += COOLDOWN_MS + 1;
  await settle(manager);
  // The second prefix is wholly free now: it and the warm one are two free, one goes back.
  assert.equal((await truth(n)).flatMap((e) => e.ipv4Prefixes).length, 2);
  const next = manager.allocate('vpcnet/p99/eth0');
  assert.ok(next);
  assert.ok(inPrefixes(next.ip, await truth(n)));
});

test('a fragmented subnet makes the pool fall back to secondary IPs, logged once and in its state, and return to prefixes', async () => {
  const n = await node();
  const run = await managerOn(n, true, undefined, TARGETS, fleetBudget());
  await startPods(run, 0, 10);
  await fragmentation(n, 'POST');
  let ips: string[];
  try {
    // Two prefixes (32 addresses) are on the ENI by now; 35 pods need a third: none can be had.
    ips = await startPods(run, 10, 25);
    const state = run.manager.prefixMode();
    assert.equal(state.mode, 'secondaryIpFallback');
    assert.equal(state.fallbacks, 1);
    assert.equal(run.logs.filter((l) => l.includes('falling back to secondary IPs')).length, 1);
    const enis = await truth(n);
    assert.ok(enis.flatMap((e) => e.secondaryIps).length > 0);
    assert.ok(
      ips.some((ip) => !inPrefixes(ip, enis)),
      'some pods run on secondary IPs',
    );
  } finally {
    await fragmentation(n, 'DELETE');
  }
  clock.t += 60_001; // past the retry backoff
  await settle(run.manager);
  assert.equal(
    run.manager.prefixMode().mode,
    'prefixes',
    run.logs.slice(-8).join('\n') + JSON.stringify(await truth(n)),
  );
  assert.ok(run.logs.some((l) => l.includes('prefixes can be had again')));
  // Pods on secondary IPs end; once cooled, those IPs go back and only prefixes remain.
  const enis = await truth(n);
  for (const ip of ips) if (!inPrefixes(ip, enis)) run.manager.release(ip);
  clock.t += COOLDOWN_MS + 1;
  await settle(run.manager);
  assert.deepEqual(
    (await truth(n)).flatMap((e) => e.secondaryIps),
    [],
    'secondary IPs taken in fallback were released',
  );
});

test('switching secondary-IP mode to prefix mode keeps running pods addresses; new pods get prefix addresses', async () => {
  const n = await node();
  const before = await managerOn(n, false);
  const old = await startPods(before, 0, 4);
  await before.manager.stop();
  // A restart with the other mode: the pool comes back from EC2 and the pods' ledger records.
  const budget = fleetBudget();
  assert.ok(budget.releaseTurnInMs() > 60_000, "the agent's release turn is minutes away");
  const after = await managerOn(n, true, before.ledger, TARGETS, budget);
  for (const ip of old) assert.equal(after.pool.state(ip)?.kind, 'assigned');
  await settle(after.manager);
  const enis = await truth(n);
  const secondary = enis.flatMap((e) => e.secondaryIps);
  for (const ip of old) assert.ok(secondary.includes(ip), `running pod's ${ip} is still assigned`);
  assert.equal(secondary.length, old.length, 'free secondary IPs went back');
  const fresh = await startPods(after, 10, 3);
  for (const ip of fresh) assert.ok(inPrefixes(ip, await truth(n)));
});

test('switching prefix mode to secondary-IP mode keeps running pods addresses; their prefix goes once unused', async () => {
  const n = await node();
  const before = await managerOn(n, true);
  const old = await startPods(before, 0, 3);
  await before.manager.stop();
  const after = await managerOn(n, false, before.ledger, TARGETS, fleetBudget());
  for (const ip of old) assert.equal(after.pool.state(ip)?.kind, 'assigned');
  await settle(after.manager);
  const held = (await truth(n)).flatMap((e) => e.ipv4Prefixes);
  for (const ip of old) assert.ok(inPrefixes(ip, await truth(n)), `running pod's ${ip} is still delegated`);
  assert.equal(held.length, 1, 'the wholly free warm prefix went back, the used one stayed');
  const fresh = await startPods(after, 10, 2);
  assert.equal(fresh.length, 2);
  for (const ip of old) after.manager.release(ip);
  await after.ledger.commit();
  clock.t += COOLDOWN_MS + 1;
  await settle(after.manager);
  assert.deepEqual(
    (await truth(n)).flatMap((e) => e.ipv4Prefixes),
    [],
    'the unused prefix went back',
  );
});

for (const prefixDelegation of [false, true]) {
  const what = prefixDelegation ? 'a /28 prefix' : 'secondary IPs';
  test(`${what} assigned by a call whose reply was lost join the pool at the next cloud syncs, without a restart`, async () => {
    const n = await node();
    // WARM_IP_TARGET=1 with secondary IPs: the primary ENI gets addresses one call at a time.
    const targets = prefixDelegation ? TARGETS : { warmEniTarget: 0, warmIpTarget: 1, cooldownSeconds: 30 };
    const { manager, pool } = await managerOn(n, prefixDelegation, undefined, targets);
    await settle(manager);
    // Every free address taken: the next pass assigns more, and EC2 runs it but its reply is lost.
    const taken: string[] = [];
    for (
      let got = manager.allocate('vpcnet/t0/eth0');
      got;
      got = manager.allocate(`vpcnet/t${taken.length}/eth0`)
    ) {
      taken.push(got.ip);
    }
    n.setFaults({ replyLostRate: 1, actions: ['AssignPrivateIpAddresses'] });
    await assert.rejects(manager.runPass(), /InternalError/);
    n.setFaults({});
    const enis = await truth(n);
    const lost = enis
      .flatMap((e) => [...e.secondaryIps, ...e.ipv4Prefixes.flatMap(addressesOf)])
      .filter((ip) => pool.state(ip) === undefined);
    assert.ok(lost.length > 0, 'EC2 holds addresses the pool does not know');

    // The ENI changed within the stale window, then two describes a stale window apart must show
    // the difference (as for any address EC2 lists that the pool lacks).
    for (let i = 0; i < 3; i++) {
      await manager.syncWithCloud();
      clock.t += 60_001;
    }
    for (const ip of lost) assert.equal(pool.state(ip)?.kind, 'free', `${ip} joined the pool`);
    // Known for what it is: nothing is given back as the wrong kind, and the next pod takes one of them.
    await settle(manager);
    const after = await truth(n);
    for (const ip of lost) {
      const still = after.some((e) => e.secondaryIps.includes(ip)) || inPrefixes(ip, after);
      assert.ok(still, `${ip} is still the ENI's in EC2`);
    }
    if (prefixDelegation) assert.equal(after.flatMap((e) => e.secondaryIps).length, 0, 'no secondary IPs');
    const next = manager.allocate('vpcnet/next/eth0');
    assert.ok(
      next !== undefined && lost.includes(next.ip),
      `the next pod takes an adopted address (${next?.ip})`,
    );
  });
}
