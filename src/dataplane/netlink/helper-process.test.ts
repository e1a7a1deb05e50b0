import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { NetlinkHelper } from './helper-process.ts';

test('a helper program that cannot be started fails the request with the program and the reason', async () => {
  const helper = new NetlinkHelper({ program: '/nonexistent/vpcnet-netlink' });
  await assert.rejects(
    helper.request((id) => `read ${id} node\n`),
    /cannot start \/nonexistent\/vpcnet-netlink: spawn \/nonexistent\/vpcnet-netlink ENOENT/,
  );
  assert.equal(helper.pid, undefined);
  await helper.close();
});

test('a helper that writes something other than answers is ended, and what was in flight fails', async () => {
  // echo prints its arguments and exits: one line that is no answer.
  const helper = new NetlinkHelper({ program: '/bin/echo', nodeNetns: '/run/netns/x' });
  await assert.rejects(
    helper.request((id) => `read ${id} node\n`),
    /netlink helper: (sent an unreadable answer|\/bin\/echo \(pid \d+\) exited with code 0)/,
  );
  await helper.close();
});

test('answers cut anywhere by the pipe, several in one write or one in thousands of pieces, reach their requests whole', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-helper-'));
  // A stand-in helper: once three reads came, answers the second and first in one write, then the
  // third (~1 MB, with multi-byte names) a kilobyte at a time.
  const script = `
    const ids = [];
    process.stdin.on('data', async (d) => {
      for (const line of String(d).split('\\n')) if (line) ids.push(Number(line.split(' ')[1]));
      if (ids.length < 3) return;
      const read = (id, links) => JSON.stringify({ id, entered: true, links, routes: [], rules: [] });
      process.stdout.write(read(ids[1], []) + '\\n' + read(ids[0], []) + '\\n');
      const big = Buffer.from(read(ids[2], Array.from({ length: 40000 }, (_, i) => ({ ifname: 'é€🦀' + i }))) + '\\n');
      for (let off = 0; off < big.length; off += 1024) {
        if (!process.stdout.write(big.subarray(off, off + 1024))) await new Promise((r) => process.stdout.once('drain', r));
      }
    });`;
  await writeFile(join(dir, 'fake-helper.cjs'), script);
  const program = join(dir, 'fake-helper');
  await writeFile(program, `#!/bin/sh\nexec '${process.execPath}' '${join(dir, 'fake-helper.cjs')}'\n`);
  await chmod(program, 0o755);
  const helper = new NetlinkHelper({ program });
  try {
    const [a, b, c] = await Promise.all([1, 2, 3].map(() => helper.request((id) => `read ${id} node\n`)));
    assert.ok(
      a !== undefined && 'dump' in a && b !== undefined && 'dump' in b && c !== undefined && 'dump' in c,
    );
    assert.deepEqual([a.id, b.id, c.id], [1, 2, 3]);
    const links = c.dump.links as { ifname: string }[];
    assert.equal(links.length, 40000);
    assert.equal(links[39999]?.ifname, 'é€🦀39999');
  } finally {
    await helper.close();
    await rm(dir, { recursive: true, force: true });
  }
});
