// The kernel marks a dump NLM_F_DUMP_INTR when the objects changed while it sent them (any message,
// NLMSG_DONE included): the answer may lack objects or hold stale ones. The helper reads such a
// dump again, a bounded number of times. Here its own read code runs against a fake kernel
// (testing/dump-intr-fake.c, linked with --wrap so its netlink requests never reach a socket) that
// marks the first N dumps it answers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const NATIVE = join(import.meta.dirname, 'native');
/** The helper's read code: dumps, their rendering, the socket, the SNAT set listing. */
const SOURCES = [
  'dump.c',
  'dump-links.c',
  'dump-routing.c',
  'dump-scoped.c',
  'jbuf.c',
  'rtnl.c',
  'nft-set.c',
  'nfnl-socket.c',
];
/** NETLINK_DUMP_ATTEMPTS (native/rtnl.h). */
const ATTEMPTS = 5;

let dir = '';
let driver = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vpcnet-dump-intr-'));
  driver = join(dir, 'dump-intr-fake');
  const sources = SOURCES.map((s) => join(NATIVE, s));
  await run('cc', [
    '-O1',
    '-Wall',
    '-Wextra',
    '-Werror',
    '-Wl,--wrap=sendto',
    '-Wl,--wrap=recv',
    '-o',
    driver,
    join(import.meta.dirname, 'testing', 'dump-intr-fake.c'),
    ...sources,
  ]);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Outcome {
  readonly rc: number;
  /** Dump requests the fake kernel answered. */
  readonly dumps: number;
  readonly linkDumps: number;
  readonly message: string;
}

async function read(
  target: 'node' | 'pod' | 'nft',
  interrupted: number,
  where: 'done' | 'data',
): Promise<Outcome> {
  const { stdout } = await run(driver, [target, String(interrupted), where]);
  return JSON.parse(stdout) as Outcome;
}

/** A whole namespace is read with five dumps: links, addresses, links again, routes, rules. */
const NODE_DUMPS = 5;

test('a whole read of a namespace whose first dump was marked interrupted on its NLMSG_DONE is read again, and succeeds', async () => {
  const clean = await read('node', 0, 'done');
  assert.deepEqual(clean, { rc: 0, dumps: NODE_DUMPS, linkDumps: 2, message: '' });
  // The first link dump is interrupted: the read starts over (one more link dump, then the rest).
  const once = await read('node', 1, 'done');
  assert.deepEqual(once, { rc: 0, dumps: NODE_DUMPS + 1, linkDumps: 3, message: '' });
});

test('a mark on an object of the dump rather than its end is read again too', async () => {
  assert.deepEqual(await read('node', 1, 'data'), {
    rc: 0,
    dumps: NODE_DUMPS + 1,
    linkDumps: 3,
    message: '',
  });
});

test("a pod's read (with neighbours) interrupted twice is read a third time", async () => {
  const clean = await read('pod', 0, 'done');
  const twice = await read('pod', 2, 'done');
  assert.equal(twice.rc, 0);
  assert.equal(twice.dumps, clean.dumps + 2);
});

test('a namespace that keeps changing fails after a bounded number of reads, saying so', async () => {
  const always = await read('node', 1000, 'done');
  assert.equal(always.rc, -1);
  assert.equal(always.dumps, ATTEMPTS);
  assert.equal(always.message, `addr show: the namespace kept changing during ${ATTEMPTS} dumps`);
});

test("the SNAT set's listing marked interrupted is listed again, and fails after the bound", async () => {
  assert.deepEqual(await read('nft', 0, 'done'), { rc: 0, dumps: 1, linkDumps: 0, message: '' });
  assert.deepEqual(await read('nft', 1, 'done'), { rc: 0, dumps: 2, linkDumps: 0, message: '' });
  const always = await read('nft', 1000, 'done');
  assert.equal(always.dumps, ATTEMPTS);
  assert.equal(always.rc, -4); // -EINTR: what requests.c words as "the set kept changing"
});
