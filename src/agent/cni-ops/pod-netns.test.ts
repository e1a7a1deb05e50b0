import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { notANetworkNamespace } from './pod-netns.ts';

test('a network namespace passes; files, directories, other namespace kinds and links to them do not', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-netns-'));
  try {
    const file = join(dir, 'file');
    await writeFile(file, '');
    await symlink(file, join(dir, 'to-file'));
    await symlink('/proc/self/ns/mnt', join(dir, 'to-mnt'));
    await symlink('/proc/self/ns/net', join(dir, 'to-net'));
    await symlink(join(dir, 'nowhere'), join(dir, 'dangling'));
    assert.equal(await notANetworkNamespace('/proc/self/ns/net'), undefined);
    assert.equal(await notANetworkNamespace(join(dir, 'to-net')), undefined);
    assert.equal(await notANetworkNamespace(file), 'a regular file');
    assert.equal(await notANetworkNamespace(join(dir, 'to-file')), 'a regular file');
    assert.equal(await notANetworkNamespace(dir), 'a directory');
    assert.equal(await notANetworkNamespace('/proc/self/ns/mnt'), 'a mnt namespace');
    assert.equal(await notANetworkNamespace('/proc/self/ns/uts'), 'a uts namespace');
    assert.equal(await notANetworkNamespace(join(dir, 'to-mnt')), 'a mnt namespace');
    assert.equal(await notANetworkNamespace(join(dir, 'dangling')), 'a dangling symbolic link');
    assert.equal(await notANetworkNamespace('/dev/null'), 'a device');
    assert.equal(
      await notANetworkNamespace(join(dir, 'absent')),
      undefined,
      'absence is reported by the caller',
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
