// Leader election against the emulator's API server (resourceVersion conflicts as it answers them).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { KubeClient } from './kube-client.ts';
import { KubeLeases, parseLeaseName } from './lease.ts';
import { LeaseElection } from './lease-election.ts';

let t: TestEmulator;
let client: KubeClient;
before(async () => {
  t = await startTestEmulator();
  client = new KubeClient({ baseUrl: t.url });
});
after(async () => {
  client.close();
  await t.close();
});

function candidates(leaseName: string, clock: { mono: number }, ...names: string[]): LeaseElection[] {
  const leases = new KubeLeases(client, parseLeaseName(`kube-system/${leaseName}`));
  return names.map(
    (identity) =>
      new LeaseElection({
        leases,
        identity,
        leaseDurationMs: 30_000,
        now: () => 1_700_000_000_000 + clock.mono,
        monotonic: () => clock.mono,
      }),
  );
}

test('one candidate leads; the others follow until it stops renewing for a lease duration', async () => {
  const clock = { mono: 0 };
  const [a, b, c] = candidates('election-1', clock, 'node-a', 'node-b', 'node-c');
  assert.equal((await a!.round()).leading, true);
  assert.equal((await b!.round()).leading, false);
  assert.equal((await c!.round()).leading, false);
  clock.mono += 20_000;
  const renewed = await a!.round((x) => ({ ...x, published: 'one' }));
  assert.equal(renewed.leading, true);
  assert.equal(renewed.lease?.annotations.published, 'one');
  clock.mono += 20_000;
  // B saw A renew 20 s ago: not expired yet. An annotation written by C is no renewal.
  assert.equal(await c!.amend((x) => ({ ...x, asked: 'subnet-1' })), true);
  assert.equal((await b!.round()).leading, false);
  clock.mono += 15_000;
  // B first saw A's renewal at 40 s on its own clock: the lease runs from then, not from 20 s.
  assert.equal((await b!.round()).leading, false);
  clock.mono += 16_000;
  const taken = await b!.round();
  assert.equal(taken.leading, true, 'B saw no renewal for 31 s');
  assert.equal(taken.lease?.holder, 'node-b');
  assert.equal(taken.lease?.transitions, 1);
  assert.deepEqual(taken.lease?.annotations, { published: 'one', asked: 'subnet-1' }, 'annotations survive');
  assert.equal((await a!.round()).leading, false, 'A comes back to find B holding it');
});

test('of two candidates acting on one read of an expired Lease, exactly one leads', async () => {
  const clock = { mono: 0 };
  const [a, b, c] = candidates('election-2', clock, 'node-a', 'node-b', 'node-c');
  await a!.round();
  await b!.round();
  await c!.round();
  clock.mono += 31_000;
  const rounds = await Promise.all([b!.round(), c!.round()]);
  assert.equal(rounds.filter((r) => r.leading).length, 1);
  const lease = await new KubeLeases(client, parseLeaseName('kube-system/election-2')).read();
  assert.equal(lease?.holder, rounds[0]!.leading ? 'node-b' : 'node-c');
});

test('a Lease name must be NAMESPACE/NAME', () => {
  assert.deepEqual(parseLeaseName('kube-system/vpcnet-subnet-census'), {
    namespace: 'kube-system',
    name: 'vpcnet-subnet-census',
  });
  assert.throws(() => parseLeaseName('vpcnet'), /NAMESPACE\/NAME/);
  assert.throws(() => parseLeaseName('Kube/x'), /NAMESPACE\/NAME/);
});
