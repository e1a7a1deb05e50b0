// The netlink helper's linkDel on the real kernel: it is answered when the kernel announces the
// deletion (native/link-del.c), so these check what must already hold at that answer: the device
// and its veth peer are gone and their names free, a kernel refusal is the same error as before,
// concurrent deletions each wait for their own device, later operations of the request still run,
// and a helper told to exit lets every deletion finish. Namespaces are named vld-* and always
// removed. No timing is asserted.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { type Namespace, NODE } from '../../src/dataplane/kernel.ts';
import { NetlinkKernel } from '../../src/dataplane/netlink/netlink-kernel.ts';
import { parseAnswer, runRequest } from '../../src/dataplane/netlink/wire.ts';
import type { KernelOp } from '../../src/plan/kernel-op.ts';
import { mustExecIn, netnsPath, withNetnsCleanup } from '../netns-fixture.ts';

const HELPER = join(import.meta.dirname, '..', '..', 'bin', 'vpcnet-netlink');
const OK = { entered: true, failures: [] };

async function withKernel<T>(node: string, fn: (k: NetlinkKernel) => Promise<T>): Promise<T> {
  const kernel = new NetlinkKernel({ program: HELPER, hostNetns: netnsPath(node) });
  try {
    return await fn(kernel);
  } finally {
    await kernel.close();
  }
}

async function linkNames(ns: string): Promise<string[]> {
  const r = await mustExecIn(ns, ['ip', '-j', 'link', 'show']);
  const links = JSON.parse(r.stdout) as { ifname: string }[];
  return links.map((l) => l.ifname).sort();
}

/** `count` veths `vldh<i>` in the node namespace, each with its peer `eth<i>` in the pod's. */
async function plantVeths(node: string, pod: string, count: number): Promise<void> {
  const lines = Array.from(
    { length: count },
    (_, i) => `link add vldh${i} type veth peer name eth${i} netns ${pod}`,
  );
  await mustExecIn(node, ['ip', '-batch', '-'], `${lines.join('\n')}\n`);
}

const del = (dev: string): KernelOp => ({ op: 'linkDel', dev });

test('after a linkDel answer the veth and its peer are gone from both namespaces and both names are free at once', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('vld-node-');
    const pod = await create('vld-pod-');
    const inPod: Namespace = { side: 'pod', path: netnsPath(pod) };
    const veth: KernelOp = {
      op: 'vethAdd',
      name: 'eth0',
      mtu: 1500,
      peer: 'vldh0',
      peerMac: '02:00:00:00:0d:01',
    };
    await withKernel(node, async (kernel) => {
      for (let round = 0; round < 5; round++) {
        assert.deepEqual(await kernel.run(inPod, [veth], 'stop'), OK);
        assert.deepEqual(await kernel.run(NODE, [del('vldh0')], 'stop'), OK);
        // Straight after the answer, with nothing in between: both names can be taken again.
        assert.deepEqual(await kernel.run(inPod, [veth], 'stop'), OK, `round ${round}: names still taken`);
        assert.deepEqual(await kernel.run(NODE, [del('vldh0')], 'stop'), OK);
        assert.deepEqual(await linkNames(node), ['lo'], `round ${round}: node`);
        assert.deepEqual(await linkNames(pod), ['lo'], `round ${round}: pod`);
      }
    });
  });
});

test('a linkDel of a missing device, or of one the kernel refuses to delete, answers the same errors as before', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('vld-node-');
    await withKernel(node, async (kernel) => {
      const r = await kernel.run(NODE, [del('vldnothere'), del('lo')], 'all');
      assert.deepEqual(r, {
        entered: true,
        failures: [
          { index: 0, message: 'Cannot find device "vldnothere"' },
          // Refused by the kernel itself: no announcement comes, the ack's error is the answer.
          { index: 1, message: 'RTNETLINK answers: Operation not supported' },
        ],
      });
      assert.deepEqual(await linkNames(node), ['lo']);
    });
  });
});

test('50 concurrent removals each wait for their own device; refusals among them stay errors', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('vld-node-');
    const pod = await create('vld-pod-');
    await plantVeths(node, pod, 50);
    await withKernel(node, async (kernel) => {
      await kernel.start();
      // Other devices' deletions are announced while these wait: none of them may count for lo.
      const refusals = Array.from({ length: 10 }, () => kernel.run(NODE, [del('lo')], 'all'));
      const removals = Array.from({ length: 50 }, (_, i) => kernel.run(NODE, [del(`vldh${i}`)], 'all'));
      const answers = await Promise.all(removals);
      for (const [i, a] of answers.entries()) assert.deepEqual(a, OK, `vldh${i}`);
      for (const r of await Promise.all(refusals)) {
        assert.deepEqual(r, {
          entered: true,
          failures: [{ index: 0, message: 'RTNETLINK answers: Operation not supported' }],
        });
      }
      assert.deepEqual(await linkNames(node), ['lo']);
      assert.deepEqual(await linkNames(pod), ['lo']);
    });
  });
});

test('operations after a linkDel in the same request run, and the answer comes once they all ran', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('vld-node-');
    const pod = await create('vld-pod-');
    await plantVeths(node, pod, 1);
    await mustExecIn(node, ['ip', 'rule', 'add', 'prio', '777', 'from', '10.9.9.9', 'lookup', '9']);
    await withKernel(node, async (kernel) => {
      const r = await kernel.run(
        NODE,
        [
          del('vldh0'),
          { op: 'ruleDel', rule: { priority: 777, from: '10.9.9.9/32', table: 9 } },
          { op: 'ruleDel', rule: { priority: 778, table: 9 } },
        ],
        'all',
      );
      assert.ok(r.entered);
      // The third ran (and failed: there is no such rule), so the second ran before the answer.
      assert.deepEqual(
        r.failures.map((f) => f.index),
        [2],
      );
      assert.match(r.failures[0]?.message ?? '', /^RTNETLINK answers: No such file or directory/);
      const rules = await mustExecIn(node, ['ip', 'rule', 'show', 'prio', '777']);
      assert.equal(rules.stdout, '');
      assert.deepEqual(await linkNames(node), ['lo']);
      assert.deepEqual(await linkNames(pod), ['lo']);
    });
  });
});

test('a helper whose stdin closes right after linkDels answers them all, exits 0 and leaves the devices gone', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('vld-node-');
    const pod = await create('vld-pod-');
    await plantVeths(node, pod, 20);
    const child = spawn(HELPER, ['--node-netns', netnsPath(node)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => resolve(code));
    });
    const requests = Array.from({ length: 20 }, (_, i) => runRequest(i + 1, NODE, [del(`vldh${i}`)], 'all'));
    child.stdin.end(requests.join(''));
    assert.equal(await exited, 0, stderr);
    const answers = stdout
      .split('\n')
      .filter((l) => l !== '')
      .map(parseAnswer);
    assert.deepEqual(
      answers.map((a) => a.id).sort((a, b) => a - b),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    for (const a of answers) assert.deepEqual(a, { id: a.id, ...OK });
    assert.deepEqual(await linkNames(node), ['lo']);
    assert.deepEqual(await linkNames(pod), ['lo']);
  });
});
