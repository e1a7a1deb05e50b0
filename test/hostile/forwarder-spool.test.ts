// The sanitized C forwarder spooling a DEL (no agent) into a spool dir that is missing, read-only,
// not writable for its user, or on a full file system. Read-only and full file systems are small
// tmpfs mounts inside a private mount namespace (`unshare -m`): the host's mounts never change.
// A DEL it cannot spool fails with code 5 naming the dir, and leaves no half-written file behind.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  assertCleanCniRun,
  type ForwarderRun,
  prepareSanitizedForwarder,
  runForwarder,
} from './sanitized-forwarder.ts';

const prepared = await prepareSanitizedForwarder();
const fwd = typeof prepared === 'string' ? undefined : prepared;

const del = {
  CNI_COMMAND: 'DEL',
  CNI_CONTAINERID: 'c1',
  CNI_IFNAME: 'eth0',
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
};

/**
 * In a private mount namespace: mounts a tmpfs with `options` on `mountPoint`, runs `setup` (sh),
 * then the forwarder; reports on fd 3 what the tmpfs holds afterwards (it vanishes with the
 * namespace).
 */
const IN_PRIVATE_MOUNT = `
set -e
mnt=$1; options=$2; setup=$3; shift 3
mount -t tmpfs -o "$options" vpchx-spool "$mnt"
cd "$mnt"
eval "$setup"
cd /
set +e
"$@"
rc=$?
find "$mnt" -mindepth 1 -printf '%P\\n' | sort >&3
exit $rc
`;

function delInPrivateMount(
  mountPoint: string,
  options: string,
  setup: string,
  spoolDir: string,
): Promise<ForwarderRun> {
  const stdin = JSON.stringify({
    cniVersion: '1.0.0',
    agentSocket: join(fwd!.dir, 'absent.sock'),
    delSpoolDir: spoolDir,
  });
  return runForwarder(
    [
      'unshare',
      '-m',
      '--propagation',
      'private',
      '/bin/sh',
      '-c',
      IN_PRIVATE_MOUNT,
      'sh',
      mountPoint,
      options,
      setup,
      fwd!.bin,
    ],
    del,
    stdin,
  );
}

describe('the sanitized forwarder spooling a DEL', { skip: typeof prepared === 'string' && prepared }, () => {
  after(() => fwd?.dispose());

  test('a missing spool dir is created (0700, with its parents) and the DEL spooled', async () => {
    const spool = join(fwd!.dir, 'missing', 'a', 'b');
    const stdin = JSON.stringify({
      cniVersion: '1.0.0',
      agentSocket: join(fwd!.dir, 'absent.sock'),
      delSpoolDir: spool,
    });
    const r = await fwd!.run(del, stdin);
    assertCleanCniRun(r, 'missing dir');
    assert.equal(r.code, 0);
    assert.equal(statSync(spool).mode & 0o777, 0o700);
    const files = readdirSync(spool);
    assert.equal(files.length, 1);
    assert.equal(JSON.parse(readFileSync(join(spool, files[0]!), 'utf8')).env.CNI_CONTAINERID, 'c1');
  });

  test('a read-only file system: code 5 with EROFS, whether the dir must be made or exists', async () => {
    const mnt = join(fwd!.dir, 'ro');
    mkdirSync(mnt);
    const cases: Array<[string, string, string]> = [
      ['the dir must be made', 'mount -o remount,ro "$mnt"', join(mnt, 'spool')],
      ['the dir exists', 'mkdir -m 700 spool; mount -o remount,ro "$mnt"', join(mnt, 'spool')],
    ];
    for (const [label, setup, spool] of cases) {
      const r = await delInPrivateMount(mnt, 'size=64k', setup, spool);
      const err = assertCleanCniRun(r, label);
      assert.equal(err?.code, 5, label);
      assert.equal(err?.msg, `cannot spool DEL in ${spool}`);
      assert.match(err?.details ?? '', /^EROFS: EROFS: read-only file system, (mkdir|open) '/, label);
      assert.match(err?.details ?? '', /; vpcnet agent not reachable at .*absent\.sock: connect ENOENT /);
    }
  });

  test('a full file system: code 5 with ENOSPC, and no half-written file left behind', async () => {
    const mnt = join(fwd!.dir, 'full');
    mkdirSync(mnt);
    const fill = 'head -c 1M /dev/zero > filler 2>/dev/null || true';
    const cases: Array<[string, string, string, RegExp]> = [
      [
        'no space for the data',
        'size=64k',
        `mkdir -m 700 spool; ${fill}`,
        /^ENOSPC: ENOSPC: no space left on device, write; /,
      ],
      [
        'no inode for the file',
        'size=64k,nr_inodes=3',
        'mkdir -m 700 spool; touch filler',
        /^ENOSPC: .*, open '/,
      ],
      ['no inode for the dir', 'size=64k,nr_inodes=2', 'touch filler', /^ENOSPC: .*, mkdir '/],
    ];
    for (const [label, options, setup, details] of cases) {
      const r = await delInPrivateMount(mnt, options, setup, join(mnt, 'spool'));
      const err = assertCleanCniRun(r, label);
      assert.equal(err?.code, 5, label);
      assert.match(err?.details ?? '', details, label);
      const left = r.fd3.split('\n').filter((l) => l !== '');
      assert.deepEqual(left, label === 'no inode for the dir' ? ['filler'] : ['filler', 'spool'], label);
    }
  });

  test('a dir its user may not write to: code 5 with EACCES', async () => {
    // The forwarder as an unprivileged user (root writes anywhere): a dir it may enter, not write.
    const base = join(fwd!.dir, 'perm');
    mkdirSync(join(base, 'locked'), { recursive: true });
    chmodSync(fwd!.dir, 0o755);
    chmodSync(base, 0o755);
    chmodSync(join(base, 'locked'), 0o555);
    for (const spool of [join(base, 'locked'), join(base, 'locked', 'sub')]) {
      const stdin = JSON.stringify({
        cniVersion: '1.0.0',
        agentSocket: join(base, 'absent.sock'),
        delSpoolDir: spool,
      });
      const r = await runForwarder(
        ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', fwd!.bin],
        { ...del },
        stdin,
      );
      const err = assertCleanCniRun(r, spool);
      assert.equal(err?.code, 5, spool);
      assert.match(err?.details ?? '', /^EACCES: EACCES: permission denied, (open|mkdir) '/, spool);
      assert.deepEqual(readdirSync(join(base, 'locked')), [], 'nothing written');
    }
  });
});
