import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BearerTokenFile } from './bearer-token.ts';

function world(initial: string) {
  const w = { content: initial, reads: 0, now: 0 };
  const token = new BearerTokenFile('/sa/token', {
    read: async () => {
      w.reads++;
      return w.content;
    },
    now: () => w.now,
    maxAgeMs: 60_000,
  });
  return { w, token };
}

test('the token file is read once, then again only after a minute', async () => {
  const { w, token } = world('t1\n');
  assert.equal(await token.current(), 't1', 'trailing newline trimmed');
  w.content = 't2';
  w.now = 59_000;
  assert.equal(await token.current(), 't1');
  assert.equal(w.reads, 1);
  w.now = 60_000;
  assert.equal(await token.current(), 't2', 'a rotated token is picked up within a minute');
  assert.equal(w.reads, 2);
});

test('a token the API refused is read again at once', async () => {
  const { w, token } = world('t1');
  await token.current();
  w.content = 't2';
  token.refused('t1');
  assert.equal(await token.current(), 't2');
});

test('refusal of an older token does not throw away the newer one', async () => {
  const { w, token } = world('t1');
  await token.current();
  token.refused('t0');
  await token.current();
  assert.equal(w.reads, 1);
});

test('concurrent requests share one read', async () => {
  const { w, token } = world('t1');
  const got = await Promise.all([token.current(), token.current(), token.current()]);
  assert.deepEqual(got, ['t1', 't1', 't1']);
  assert.equal(w.reads, 1);
});

test('a missing or empty token file fails naming the file', async () => {
  const missing = new BearerTokenFile('/nope/token', {
    read: async () => {
      throw new Error('ENOENT: no such file or directory');
    },
  });
  await assert.rejects(missing.current(), /\/nope\/token: ENOENT/);
  const { token } = world('  \n');
  await assert.rejects(token.current(), /\/sa\/token is empty/);
});
