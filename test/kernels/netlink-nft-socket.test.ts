// The netlink helper keeps its nfnetlink sockets open in the node's namespace (native/nfnl-socket.c):
// closing one makes nf_tables wait for an RCU grace period while holding the lock that every link
// deletion in the namespace needs, so SNAT removals held up DELs. These check that the socket stays,
// that changes through it keep their answers (also after an error), and that no socket is kept in a
// pod's namespace (it would keep the namespace alive). Namespaces are named vld-* and always removed.
import assert from 'node:assert/strict';
import { readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { SNAT_SET, SNAT_TABLE } from '../../src/dataplane/ip-cli/snat.ts';
import { type Namespace, NODE } from '../../src/dataplane/kernel.ts';
import { NetlinkHelper } from '../../src/dataplane/netlink/helper-process.ts';
import { runRequest, snatSetRequest } from '../../src/dataplane/netlink/wire.ts';
import type { KernelOp } from '../../src/plan/kernel-op.ts';
import { mustExecIn, netnsPath, withNetnsCleanup } from '../netns-fixture.ts';

const HELPER = join(import.meta.dirname, '..', '..', 'bin', 'vpcnet-netlink');
const NETLINK_NETFILTER = '12';

async function plantSnatSet(ns: string): Promise<void> {
  await mustExecIn(
    ns,
    ['nft', '-f', '-'],
    `table ip ${SNAT_TABLE} { set ${SNAT_SET} { type ipv4_addr; }; }\n`,
  );
}

/** Inodes of the nfnetlink sockets open in `ns` (its /proc/net/netlink). */
async function nfnetlinkSockets(ns: string): Promise<Set<string>> {
  const r = await mustExecIn(ns, ['cat', '/proc/net/netlink']);
  const rows = r.stdout.trim().split('\n').slice(1);
  const cols = rows.map((l) => l.trim().split(/\s+/));
  return new Set(cols.filter((c) => c[1] === NETLINK_NETFILTER).map((c) => c[c.length - 1] ?? ''));
}

/** Inodes of the sockets process `pid` holds. */
async function socketsOf(pid: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m?.[1] !== undefined) inodes.add(m[1]);
  }
  return inodes;
}

async function heldIn(pid: number, ns: string): Promise<number> {
  const mine = await socketsOf(pid);
  return [...(await nfnetlinkSockets(ns))].filter((i) => mine.has(i)).length;
}

test("SNAT changes keep the helper's nfnetlink socket open in the node's namespace, none in a pod's, and answer as before", async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('vld-node-');
    const pod = await create('vld-pod-');
    await plantSnatSet(node);
    await plantSnatSet(pod);
    const helper = new NetlinkHelper({ program: HELPER, nodeNetns: netnsPath(node) });
    try {
      const run = (ops: KernelOp[]) => helper.request((id) => runRequest(id, NODE, ops, 'stop'));
      const elements = (ns: Namespace) => helper.request((id) => snatSetRequest(id, ns));
      const ok = (id: number) => ({ id, entered: true, failures: [] });
      const add: KernelOp = { op: 'snatAdd', ip: '10.0.0.9' };
      const del: KernelOp = { op: 'snatDel', ip: '10.0.0.9' };
      for (let round = 0; round < 3; round++) {
        const added = await run([add, add]);
        assert.deepEqual(added, ok(added.id), 'adding a present element is no error');
        const listed = await elements(NODE);
        assert.deepEqual(listed, { id: listed.id, entered: true, elements: ['10.0.0.9'] });
        const removed = await run([del]);
        assert.deepEqual(removed, ok(removed.id));
        // A missing element is an error from the kernel; the next change still gets its own answer.
        const again = await run([del]);
        assert.deepEqual(again, {
          id: again.id,
          entered: true,
          failures: [{ index: 0, message: 'nftables answers: No such file or directory' }],
        });
      }
      // After a failed change the thread's socket is replaced: the next one opens and stays.
      const emptied = await elements(NODE);
      assert.deepEqual(emptied, { id: emptied.id, entered: true, elements: [] });
      const podRead = await elements({ side: 'pod', path: netnsPath(pod) });
      assert.deepEqual(podRead, { id: podRead.id, entered: true, elements: [] });
      const pid = helper.pid;
      assert.ok(pid !== undefined);
      assert.ok((await heldIn(pid, node)) > 0, "no nfnetlink socket of the helper's left open on the node");
      assert.equal(await heldIn(pid, pod), 0, "a socket of the helper's is kept in the pod's namespace");
    } finally {
      await helper.close();
    }
  });
});
