import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { silentLogger } from '../../infra/log.ts';
import { whilePoolIsBusy } from '../../infra/testing/busy-thread-pool.ts';
import { cniRequest } from '../testing/cni-request.ts';
import { applySpooledDelsOf, type SpooledDel } from './spool-first.ts';

const name = (n: number) => `${String(n).padStart(15, '0')}-${'1'.padStart(20, '0')}-1-abcd0123.del.json`;
const key = { network: 'vpcnet', containerId: 'c1', ifName: 'eth0' };

test('an ADD applies, in order, only the DELs spooled for its own key and removes just those', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-first-'));
  try {
    const eth1 = cniRequest('DEL', 'c1', '/ns/old');
    const other = { ...eth1, env: { ...eth1.env, CNI_IFNAME: 'eth1' } };
    await writeFile(join(dir, name(1)), JSON.stringify(cniRequest('DEL', 'c1', '/ns/first')));
    await writeFile(join(dir, name(2)), JSON.stringify(cniRequest('DEL', 'c2', '/ns/c2')));
    await writeFile(join(dir, name(3)), JSON.stringify(other));
    await writeFile(join(dir, name(4)), JSON.stringify(cniRequest('ADD', 'c1', '/ns/add')));
    await writeFile(join(dir, name(5)), JSON.stringify(cniRequest('DEL', 'c1', '/ns/second')));
    const applied: SpooledDel[] = [];
    const n = await applySpooledDelsOf(key, { dir, log: silentLogger }, async (del) => {
      applied.push(del);
    });
    assert.equal(n, 2);
    assert.deepEqual(
      applied.map((d) => d.netns),
      ['/ns/first', '/ns/second'],
    );
    assert.deepEqual((await readdir(dir)).sort(), [name(2), name(3), name(4)]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a spooled DEL that fails fails the ADD and stays spooled', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-first-'));
  try {
    await writeFile(join(dir, name(1)), JSON.stringify(cniRequest('DEL', 'c1', '/ns/old')));
    await assert.rejects(
      applySpooledDelsOf(key, { dir, log: silentLogger }, async () => {
        throw new Error('kernel busy');
      }),
      /kernel busy/,
    );
    assert.deepEqual(await readdir(dir), [name(1)]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('no spool dir: nothing to apply', async () => {
  const n = await applySpooledDelsOf(
    key,
    { dir: '/nonexistent/vpcnet-spool', log: silentLogger },
    async () => {
      throw new Error('nothing should be applied');
    },
  );
  assert.equal(n, 0);
});

test('an empty spool is looked at without a thread of libuv’s pool: an ADD does not wait for one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-spool-'));
  try {
    const n = await whilePoolIsBusy(() =>
      applySpooledDelsOf(key, { dir, log: silentLogger }, async () => {
        throw new Error('nothing should be applied');
      }),
    );
    assert.equal(n, 0);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
