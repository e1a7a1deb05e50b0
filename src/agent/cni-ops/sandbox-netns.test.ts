import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { netnsIdentity } from '../../dataplane/netns-identity.ts';
import { sandboxNetns } from './sandbox-netns.ts';

test('a namespace path is gone when it does not exist or names another namespace, present when it names the recorded one', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-sandbox-'));
  try {
    const path = join(dir, 'ns');
    await writeFile(path, '');
    const id = await netnsIdentity(path);
    assert.equal(await sandboxNetns(path, id), 'present');
    assert.equal(
      await sandboxNetns(path, undefined),
      'present',
      'a record without identity: the path decides',
    );
    // Another file takes the path over while the first still exists, so its inode is another one.
    await writeFile(join(dir, 'next'), '');
    await rename(join(dir, 'next'), path);
    assert.equal(await sandboxNetns(path, id), 'gone');
    assert.equal(await sandboxNetns(join(path, 'below-a-file'), undefined), 'gone');
    await rm(path);
    assert.equal(await sandboxNetns(path, id), 'gone');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a path that cannot be read for another reason than its absence is not proof that it is gone', async () => {
  const denied = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
  assert.equal(await sandboxNetns('/var/run/netns/x', '1:2', () => Promise.reject(denied)), 'unreadable');
});
