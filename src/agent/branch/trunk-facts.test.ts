// The agent's view of EC2's trunk associations: one read answers a burst, misses are coalesced and
// spaced so that forged claims cannot spend the EC2 budget, and a fresh answer is a new read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BranchEniFacts, TrunkAssociation } from '../../cloud/cloud.ts';
import { TrunkFacts } from './trunk-facts.ts';

const TRUNK = 'eni-0000000000000trunk';

class Ec2 {
  readonly associations: TrunkAssociation[] = [];
  readonly enis = new Map<string, BranchEniFacts>();
  assocCalls = 0;
  eniCalls = 0;
  /** Each call answers after this many ms of the clock. */
  latencyMs = 5;
  constructor(readonly clock: Clock) {}
  add(n: number, vlanId = n): string {
    const eniId = `eni-00000000000000${n.toString(16).padStart(2, '0')}`;
    this.associations.push({
      associationId: `trunk-assoc-${n}`,
      branchEniId: eniId,
      trunkEniId: TRUNK,
      vlanId,
    });
    this.enis.set(eniId, {
      eniId,
      mac: `0a:00:00:00:00:${n.toString(16).padStart(2, '0')}`,
      ip: `10.0.8.${n}`,
      subnetId: 'subnet-0b',
      subnetCidr: '10.0.8.0/24',
    });
    return eniId;
  }
  async describeTrunkAssociations(trunk: string): Promise<TrunkAssociation[]> {
    this.assocCalls++;
    const snapshot = this.associations.filter((a) => a.trunkEniId === trunk);
    await this.clock.sleep(this.latencyMs);
    return snapshot;
  }
  async describeBranchEnis(ids: readonly string[]): Promise<BranchEniFacts[]> {
    this.eniCalls++;
    await this.clock.sleep(this.latencyMs);
    return ids.flatMap((id) => (this.enis.has(id) ? [this.enis.get(id)!] : []));
  }
}

/** A clock whose sleeps end when the test advances it. */
class Clock {
  t = 0;
  readonly #sleepers: { until: number; wake: () => void }[] = [];
  now = () => this.t;
  sleep = (ms: number) => new Promise<void>((wake) => this.#sleepers.push({ until: this.t + ms, wake }));
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await new Promise((r) => setImmediate(r));
      const next = this.#sleepers.filter((s) => s.until <= end).sort((a, b) => a.until - b.until)[0];
      if (!next) break;
      this.t = Math.max(this.t, next.until);
      this.#sleepers.splice(this.#sleepers.indexOf(next), 1);
      next.wake();
    }
    this.t = end;
    await new Promise((r) => setImmediate(r));
  }
}

function world(opts: { minReadGapMs?: number; maxAgeMs?: number } = {}) {
  const clock = new Clock();
  const ec2 = new Ec2(clock);
  const facts = new TrunkFacts({ cloud: ec2, now: clock.now, sleep: clock.sleep, ...opts });
  return { clock, ec2, facts };
}

test('a burst of 30 claims for branch ENIs associated beforehand costs one read of the trunk and one describe', async () => {
  const { clock, ec2, facts } = world();
  const ids = Array.from({ length: 30 }, (_, i) => ec2.add(i + 1));
  const answers = Promise.all(ids.map((id) => facts.branch(TRUNK, id)));
  await clock.advance(100);
  const got = await answers;
  assert.deepEqual(
    got.map((b) => b?.vlanId),
    ids.map((_, i) => i + 1),
  );
  assert.equal(ec2.assocCalls, 1);
  assert.equal(ec2.eniCalls, 1);
  // Later claims of the same ENIs (replaced sandboxes) are answered from the cache.
  await facts.branch(TRUNK, ids[3]!);
  assert.equal(ec2.assocCalls, 1);
});

test('an ENI associated after the last read is found by a new read; one EC2 does not know is not', async () => {
  const { clock, ec2, facts } = world({ minReadGapMs: 0 });
  const first = ec2.add(1);
  const p1 = facts.branch(TRUNK, first);
  await clock.advance(20);
  assert.ok(await p1);
  const later = ec2.add(2);
  const p2 = facts.branch(TRUNK, later);
  await clock.advance(20);
  assert.equal((await p2)?.ip, '10.0.8.2');
  const p3 = facts.branch(TRUNK, 'eni-00000000000dead');
  await clock.advance(20);
  assert.equal(await p3, undefined);
  assert.equal(ec2.assocCalls, 3);
});

test('misses for forged ENIs are coalesced and spaced: at most one read per gap, however many claims', async () => {
  const { clock, ec2, facts } = world({ minReadGapMs: 1000 });
  ec2.add(1);
  const warm = facts.branch(TRUNK, 'eni-0000000000000001');
  await clock.advance(20);
  await warm;
  const forged = Array.from({ length: 200 }, (_, i) =>
    facts.branch(TRUNK, `eni-0000000000f${String(i).padStart(4, '0')}`),
  );
  await clock.advance(500);
  assert.equal(ec2.assocCalls, 1, 'no read before the gap has passed');
  await clock.advance(600);
  assert.deepEqual(new Set(await Promise.all(forged)), new Set([undefined]));
  assert.equal(ec2.assocCalls, 2, 'one read answered all 200 misses');
});

test('a fresh answer comes from a read begun after the question, even when the cache has the ENI', async () => {
  const { clock, ec2, facts } = world({ minReadGapMs: 0 });
  const id = ec2.add(1);
  const p1 = facts.branch(TRUNK, id);
  await clock.advance(20);
  assert.equal((await p1)?.vlanId, 1);
  // The controller moves the ENI to another VLAN; the cache still says 1.
  ec2.associations[0] = { ...ec2.associations[0]!, vlanId: 9 };
  const cached = facts.branch(TRUNK, id);
  const fresh = facts.branch(TRUNK, id, { fresh: true });
  await clock.advance(20);
  assert.equal((await cached)?.vlanId, 1);
  assert.equal((await fresh)?.vlanId, 9);
});

test('an answer older than the maximum age is read again before it confirms anything', async () => {
  const { clock, ec2, facts } = world({ minReadGapMs: 0, maxAgeMs: 60_000 });
  const id = ec2.add(1);
  const p1 = facts.branch(TRUNK, id);
  await clock.advance(20);
  await p1;
  ec2.associations.length = 0; // disassociated since
  await clock.advance(61_000);
  const p2 = facts.branch(TRUNK, id);
  await clock.advance(20);
  assert.equal(await p2, undefined);
  assert.equal(ec2.assocCalls, 2);
});

test("a branch ENI on another node's trunk confirms nothing for this trunk", async () => {
  const { clock, ec2, facts } = world();
  const id = ec2.add(1);
  ec2.associations[0] = { ...ec2.associations[0]!, trunkEniId: 'eni-00000000000other' };
  const p = facts.branch(TRUNK, id);
  await clock.advance(50);
  assert.equal(await p, undefined);
});
