import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AwsCredentials, CredentialSource } from './aws-credentials.ts';
import { RefreshingCredentials } from './refreshing-credentials.ts';

const MINUTE = 60_000;

/** A source handing out numbered credentials that live `lifetimeMs` from the fake clock's now. */
function countingSource(clock: { now: number }, lifetimeMs: number | undefined) {
  let fetched = 0;
  let failing = false;
  const source: CredentialSource = {
    name: 'test source',
    fetch: async () => {
      fetched++;
      if (failing) throw new Error('source down');
      const credentials: AwsCredentials = {
        accessKeyId: `AKID${fetched}`,
        secretAccessKey: 'secret',
        ...(lifetimeMs === undefined ? {} : { sessionToken: 't', expiresAt: clock.now + lifetimeMs }),
      };
      return credentials;
    },
  };
  return {
    source,
    fetched: () => fetched,
    setFailing: (f: boolean) => {
      failing = f;
    },
  };
}

test('long-term keys are fetched once and kept', async () => {
  const clock = { now: 0 };
  const counting = countingSource(clock, undefined);
  const creds = new RefreshingCredentials(counting.source, { now: () => clock.now });
  await creds.get();
  clock.now += 1000 * MINUTE;
  assert.equal((await creds.get()).accessKeyId, 'AKID1');
  assert.equal(counting.fetched(), 1);
});

test('temporary credentials are kept until 5 minutes before they expire, then fetched again', async () => {
  const clock = { now: 0 };
  const counting = countingSource(clock, 60 * MINUTE);
  const creds = new RefreshingCredentials(counting.source, { now: () => clock.now });
  assert.equal((await creds.get()).accessKeyId, 'AKID1');
  clock.now = 54 * MINUTE;
  assert.equal((await creds.get()).accessKeyId, 'AKID1', 'six minutes left: kept');
  clock.now = 55 * MINUTE + 1;
  assert.equal((await creds.get()).accessKeyId, 'AKID2', 'under five minutes left: renewed');
  assert.equal(counting.fetched(), 2);
});

test('concurrent callers share one fetch', async () => {
  const clock = { now: 0 };
  const counting = countingSource(clock, 60 * MINUTE);
  const creds = new RefreshingCredentials(counting.source, { now: () => clock.now });
  const got = await Promise.all([creds.get(), creds.get(), creds.get()]);
  assert.deepEqual(
    got.map((c) => c.accessKeyId),
    ['AKID1', 'AKID1', 'AKID1'],
  );
  assert.equal(counting.fetched(), 1);
});

test('a failed renewal keeps credentials that still work, and fails once they have expired', async () => {
  const clock = { now: 0 };
  const counting = countingSource(clock, 60 * MINUTE);
  const creds = new RefreshingCredentials(counting.source, { now: () => clock.now });
  await creds.get();
  counting.setFailing(true);
  clock.now = 58 * MINUTE;
  assert.equal((await creds.get()).accessKeyId, 'AKID1');
  clock.now = 60 * MINUTE;
  await assert.rejects(creds.get(), /source down/);
  counting.setFailing(false);
  assert.equal((await creds.get()).accessKeyId, 'AKID4', 'the next call tries again');
});

test('invalidate() makes the next call fetch, e.g. after EC2 refused the credentials', async () => {
  const clock = { now: 0 };
  const counting = countingSource(clock, 60 * MINUTE);
  const creds = new RefreshingCredentials(counting.source, { now: () => clock.now });
  await creds.get();
  creds.invalidate();
  assert.equal((await creds.get()).accessKeyId, 'AKID2');
});

test('credentials that live shorter than twice the margin are renewed half way, not on every call', async () => {
  const clock = { now: 0 };
  const counting = countingSource(clock, 4 * MINUTE);
  const creds = new RefreshingCredentials(counting.source, { now: () => clock.now });
  await creds.get();
  clock.now = 1 * MINUTE;
  await creds.get();
  assert.equal(counting.fetched(), 1);
  clock.now = 2 * MINUTE;
  await creds.get();
  assert.equal(counting.fetched(), 2);
});
