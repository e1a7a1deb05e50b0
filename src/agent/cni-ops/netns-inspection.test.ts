import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { netnsIdentity } from '../../dataplane/netns-identity.ts';
import { whilePoolIsBusy } from '../../infra/testing/busy-thread-pool.ts';
import { inspectNetns } from './netns-inspection.ts';
import { notANetworkNamespace } from './pod-netns.ts';

const neverAsked = async (path: string): Promise<string | undefined> => {
  throw new Error(`the careful way was taken for ${path}`);
};

test('a network namespace is vouched for by one look: its identity, without the careful checks', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-inspect-'));
  try {
    await symlink('/proc/self/ns/net', join(dir, 'to-net'));
    // Bind mounts of namespaces (`ip netns add`, a runtime's) are in test/kernels/netns-inspection.test.ts.
    for (const path of ['/proc/self/ns/net', join(dir, 'to-net')]) {
      const seen = await inspectNetns(path, neverAsked);
      assert.deepEqual(seen, { exists: true, notNetns: undefined, identity: await netnsIdentity(path) });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('anything else gets the careful answers, word for word', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-inspect-'));
  try {
    const file = join(dir, 'file');
    await writeFile(file, '');
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await symlink(join(dir, 'nowhere'), join(dir, 'dangling'));
    const cases: [string, string | undefined][] = [
      [file, 'a regular file'],
      [dir, 'a directory'],
      // O_PATH: a FIFO with no writer does not block the look.
      [fifo, 'a FIFO'],
      ['/proc/self/ns/mnt', 'a mnt namespace'],
      ['/dev/null', 'a device'],
    ];
    for (const [path, words] of cases) {
      const seen = await inspectNetns(path, notANetworkNamespace);
      assert.deepEqual(seen, { exists: true, notNetns: words, identity: await netnsIdentity(path) }, path);
    }
    for (const path of [join(dir, 'absent'), join(dir, 'dangling')]) {
      assert.equal((await inspectNetns(path, notANetworkNamespace)).exists, false, path);
    }
    // The careful answer is the one given, also when it accepts (tests' plain files as namespaces).
    assert.equal((await inspectNetns(file, async () => undefined)).notNetns, undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the look takes no thread of libuv’s pool: a network namespace is vouched for while every one is busy', async () => {
  const seen = await whilePoolIsBusy(() => inspectNetns('/proc/self/ns/net', neverAsked));
  assert.equal(seen.exists, true);
  assert.equal(seen.notNetns, undefined);
});
