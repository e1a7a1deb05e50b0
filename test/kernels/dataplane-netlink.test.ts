// The netlink driver (src/dataplane/netlink/) on the real kernel: the dataplane scenario table that
// the Linux driver and the fake pass, reads that agree with `ip -j` field for field, 50 concurrent
// creates that each land in their own namespace only, refusal of paths that are not network
// namespaces, and a helper that dies mid-flight. Namespaces are named nl9-* and always removed.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { IpCliKernel } from '../../src/dataplane/ip-cli/ip-cli-kernel.ts';
import { NODE } from '../../src/dataplane/kernel.ts';
import { NetlinkKernel } from '../../src/dataplane/netlink/netlink-kernel.ts';
import { hostVeth, plan } from '../../src/dataplane/testing/scenario-helpers.ts';
import { SCENARIO_VPC, scenarios } from '../../src/dataplane/testing/scenarios.ts';
import { runToSuccess } from '../../src/infra/process.ts';
import { isAlreadyGone, type KernelOp } from '../../src/plan/kernel-op.ts';
import { planRegularPod } from '../../src/plan/pod-plan.ts';
import { mustExecIn, netnsPath, plantEniLink, withNetnsCleanup } from '../netns-fixture.ts';
import { NETLINK_HELPER, runNetlinkScenario, withNetlinkKernel } from './scenario-harness.ts';

// This kernel has no 802.1q: branch devices use the macvlan driver (test/kernels/vm/ runs the table with vlan).
for (const s of scenarios) {
  test(`netlink kernel: ${s.name}`, () => runNetlinkScenario(s, 'nl9-', 'macvlan'));
}

test('a pod plan, SNAT element included, is created, inspected and removed without starting a process', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const pod = netnsPath(await create('nl9-pod-'));
    // The nft side counts what it starts; the helper is started once, before the operations, and
    // nft only sets up the node's table.
    const nft = new IpCliKernel({ hostNetns: netnsPath(node), snat: true });
    const kernel = new NetlinkKernel({ program: NETLINK_HELPER, hostNetns: netnsPath(node), nft });
    try {
      await kernel.start();
      const dp = new Dataplane(kernel);
      await dp.setupNode(SCENARIO_VPC);
      const afterSetup = nft.commandsRun;
      const resources = planRegularPod({
        key: { network: 'vpcnet', containerId: 'c-budget', ifName: 'eth0' },
        vethPrefix: 'vpc',
        ip: '10.0.0.7',
        eniId: 'eni-1',
        routeTable: 2,
        mtu: 9001,
        snat: true,
      });
      await dp.create(pod, resources);
      assert.deepEqual(await dp.inspect(pod, resources), { findings: [] });
      assert.deepEqual((await kernel.readNode()).snatElements, ['10.0.0.7']);
      await dp.remove(resources);
      assert.deepEqual((await kernel.readNode()).snatElements, []);
      assert.equal(nft.commandsRun, afterSetup);
      assert.equal(kernel.helperStarts, 1);
    } finally {
      await kernel.close();
    }
  });
});

test('the SNAT set reads as absent before setup, and a removal of a missing element counts as gone', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      assert.equal((await kernel.readNode()).snatElements, undefined);
      const add = await kernel.run(NODE, [{ op: 'snatAdd', ip: '10.0.0.8' }], 'stop');
      assert.equal(add.entered && add.failures[0]?.message, 'nftables answers: No such file or directory');
      await new Dataplane(kernel).setupNode(SCENARIO_VPC);
      const del = await kernel.run(NODE, [{ op: 'snatDel', ip: '10.0.0.8' }], 'all');
      assert.ok(del.entered && del.failures.every((f) => isAlreadyGone(f.message)));
    });
  });
});

test('a removal of several SNAT elements, one of them missing, is one transaction that leaves none', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      await new Dataplane(kernel).setupNode(SCENARIO_VPC);
      const ips = ['10.0.0.21', '10.0.0.22', '10.0.0.23'];
      const add = await kernel.run(
        NODE,
        ips.map((ip) => ({ op: 'snatAdd', ip })),
        'stop',
      );
      assert.deepEqual(add, { entered: true, failures: [] });
      const del = await kernel.run(
        NODE,
        [...ips, '10.0.0.99'].map((ip) => ({ op: 'snatDel', ip })),
        'all',
      );
      assert.deepEqual(del, { entered: true, failures: [] });
      assert.deepEqual((await kernel.readNode()).snatElements, []);
    });
  });
});

test('reads through the helper give the same views as ip -j, on the node and in a pod', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const pod = netnsPath(await create('nl9-pod-'));
    await plantEniLink(node, 'eni1', '02:0e:0e:00:00:01');
    await mustExecIn(node, ['ip', 'link', 'set', 'eni1', 'up']);
    await mustExecIn(node, ['ip', 'rule', 'add', 'fwmark', '7', 'lookup', '9', 'prio', '700']);
    await mustExecIn(node, [
      'ip',
      'route',
      'add',
      '10.9.0.0/16',
      'via',
      '10.0.1.1',
      'dev',
      'eni1',
      'onlink',
      'table',
      '300',
      'metric',
      '5',
    ]);
    const linux = new IpCliKernel({ hostNetns: netnsPath(node) });
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const dp = new Dataplane(kernel);
      await dp.setupNode(SCENARIO_VPC);
      await dp.create(pod, plan('c-read', '10.0.0.5'));
      await dp.create(pod, plan('c-read2', '10.0.0.6', 3, 'eth1'));
      assert.deepEqual(await kernel.readNode(), await linux.readNode());
      const viaHelper = await kernel.readPod(pod);
      assert.deepEqual(viaHelper, await linux.readPod(pod));
      assert.ok(viaHelper.reachable && viaHelper.neighbours.some((n) => n.state.includes('PERMANENT')));
      const node1 = await kernel.readNode();
      assert.ok(node1.rules.some((r) => r.priority === 700 && (r.other ?? []).includes('fwmark')));
      assert.ok(node1.routes.some((r) => r.table === 300 && r.metric === 5 && r.gateway === '10.0.1.1'));
    });
  });
});

test("failures name the same operations as the Linux driver does, in ip's words (the kernel's reason may follow)", async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const ops: KernelOp[] = [
      { op: 'addrAdd', dev: 'lo', cidr: '10.1.0.1/32' },
      { op: 'addrAdd', dev: 'lo', cidr: '10.1.0.1/32' },
      { op: 'addrDel', dev: 'lo', cidr: '10.9.0.1/32' },
      { op: 'linkUp', dev: 'lo' },
      { op: 'routeAdd', dst: '10.3.0.0/16', dev: 'lo', table: 2, scopeLink: true },
      { op: 'routeAdd', dst: '10.3.0.0/16', dev: 'lo', table: 2, scopeLink: true },
      { op: 'routeDel', dst: '10.4.0.0/16', dev: 'lo', table: 2 },
      { op: 'ruleAdd', rule: { priority: 100, from: '10.0.0.1/32', table: 2 } },
      { op: 'ruleAdd', rule: { priority: 100, from: '10.0.0.1/32', table: 2 } },
      { op: 'ruleDel', rule: { priority: 101, table: 2 } },
      { op: 'linkDel', dev: 'nl9nothere' },
      { op: 'neighAdd', dev: 'nl9nothere', ip: '10.1.0.9', lladdr: '02:00:00:00:00:01' },
    ];
    const expected = [1, 2, 5, 6, 8, 9, 10, 11];
    const viaIp = await new IpCliKernel({ hostNetns: netnsPath(node) }).run({ side: 'node' }, ops, 'all');
    await mustExecIn(node, ['ip', 'rule', 'del', 'prio', '100']);
    await mustExecIn(node, ['ip', 'addr', 'flush', 'dev', 'lo']);
    await mustExecIn(node, ['ip', 'route', 'flush', 'table', '2']);
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const viaNetlink = await kernel.run({ side: 'node' }, ops, 'all');
      assert.ok(viaIp.entered && viaNetlink.entered);
      assert.deepEqual(
        viaIp.failures.map((f) => f.index),
        expected,
      );
      assert.deepEqual(
        viaNetlink.failures.map((f) => f.index),
        expected,
      );
      viaNetlink.failures.forEach((f, i) => {
        const ip = viaIp.failures[i]?.message ?? '';
        // ip prints the kernel's reason alone ("Error: ipv4: Address not found.") when there is one.
        if (ip.startsWith('Error: ')) assert.equal(isAlreadyGone(f.message), isAlreadyGone(ip), f.message);
        else assert.ok(f.message === ip || f.message.startsWith(`${ip} (`), `${f.message} vs ${ip}`);
      });
      // 'stop': the address exists now, so the first operation fails and nothing after it runs.
      await mustExecIn(node, ['ip', 'route', 'flush', 'table', '2']);
      const stop = await kernel.run({ side: 'node' }, ops, 'stop');
      assert.ok(stop.entered);
      assert.deepEqual(
        stop.failures.map((f) => f.index),
        [0],
      );
      assert.match(stop.failures[0]?.message ?? '', /^RTNETLINK answers: File exists/);
      const routes = await mustExecIn(node, ['ip', 'route', 'show', 'table', '2']);
      assert.equal(routes.stdout, '');
    });
  });
});

test('50 concurrent creates in 50 pod namespaces each land in their own namespace only', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const pods = await Promise.all(
      Array.from({ length: 50 }, async () => netnsPath(await create('nl9-pod-'))),
    );
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const dp = new Dataplane(kernel);
      await dp.setupNode(SCENARIO_VPC);
      const plans = pods.map((_, i) => plan(`c-burst-${i}`, `10.0.${Math.floor(i / 200)}.${10 + i}`, 254));
      await Promise.all(pods.map((p, i) => dp.create(p, plans[i] ?? [])));
      const views = await Promise.all(pods.map((p) => kernel.readPod(p)));
      views.forEach((v, i) => {
        assert.ok(v.reachable, `pod ${i} unreachable`);
        const addresses = v.links.flatMap((l) =>
          l.addresses.filter((a) => a.family === 'inet').map((a) => `${l.ifname} ${a.local}`),
        );
        assert.deepEqual(addresses.sort(), [`eth0 10.0.0.${10 + i}`, 'lo 127.0.0.1'].sort(), `pod ${i}`);
      });
      const nodeView = await kernel.readNode();
      const hostVeths = nodeView.links
        .filter((l) => l.kind === 'veth')
        .map((l) => l.ifname)
        .sort();
      assert.deepEqual(hostVeths, plans.map(hostVeth).sort());
      assert.equal(nodeView.links.filter((l) => l.ifname === 'eth0').length, 0, 'no pod end on the node');
      await Promise.all(plans.map((p) => dp.remove(p)));
      const after = await kernel.readNode();
      assert.deepEqual(
        after.links.filter((l) => l.kind === 'veth'),
        [],
      );
    });
  });
});

test('a request of thousands of operations (a GC of a full node) runs whole', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const rules = Array.from({ length: 1500 }, (_, i) => ({ priority: 1000 + i, table: 2 }));
      const added = await kernel.run(
        { side: 'node' },
        rules.map((rule) => ({ op: 'ruleAdd', rule }) as const),
        'stop',
      );
      assert.deepEqual(added, { entered: true, failures: [] });
      assert.equal((await kernel.readNode()).rules.filter((r) => r.table === 2).length, 1500);
      const removed = await kernel.run(
        { side: 'node' },
        rules.map((rule) => ({ op: 'ruleDel', rule }) as const),
        'all',
      );
      assert.deepEqual(removed, { entered: true, failures: [] });
      assert.equal((await kernel.readNode()).rules.filter((r) => r.table === 2).length, 0);
    });
  });
});

test('a path that is not a network namespace is refused before anything runs', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const dir = await mkdtemp(join(tmpdir(), 'nl9-not-a-netns-'));
    const file = join(dir, 'file');
    const fifo = join(dir, 'fifo');
    await writeFile(file, '');
    // A FIFO would block an open without O_NONBLOCK: refused at once instead of holding a worker.
    await runToSuccess(['mkfifo', fifo]);
    try {
      await withNetlinkKernel(netnsPath(node), async (kernel) => {
        const op = { op: 'linkDel', dev: 'lo' } as const;
        for (const path of [file, fifo, '/proc/self/ns/uts', '/var/run/netns/nl9-absent']) {
          const r = await kernel.run({ side: 'pod', path }, [op], 'stop');
          assert.equal(r.entered, false, path);
          assert.match(r.entered ? '' : r.reason, new RegExp(path.replaceAll('/', '\\/')));
          const view = await kernel.readPod(path);
          assert.equal(view.reachable, false);
        }
        const r = await kernel.run({ side: 'pod', path: file }, [op], 'stop');
        assert.match(r.entered ? '' : r.reason, /is not a network namespace/);
        // The node's loopback is still there: nothing ran anywhere.
        assert.ok((await kernel.readNode()).links.some((l) => l.ifname === 'lo'));
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

test('a plan runs its parts in turn in one request and stops at the first that is not entered or fails', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const pod = await create('nl9-pod-');
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      const nodeLink = {
        op: 'vethAdd',
        name: 'nl9a',
        mtu: 1500,
        peer: 'nl9b',
        peerMac: '02:00:00:00:09:01',
      } as const;
      const up = { op: 'linkUp', dev: 'nl9a' } as const;
      // Pod part not entered: the node part does not run (its veth is not made).
      const absent = await kernel.runInTurn([
        { ns: { side: 'pod', path: '/var/run/netns/nl9-absent' }, ops: [up] },
        { ns: NODE, ops: [nodeLink] },
      ]);
      assert.equal(absent.length, 1);
      assert.equal(absent[0]?.entered, false);
      // Pod part fails at its second operation: the first ran, the node part did not.
      const failed = await kernel.runInTurn([
        { ns: { side: 'pod', path: netnsPath(pod) }, ops: [{ op: 'linkUp', dev: 'lo' }, up] },
        { ns: NODE, ops: [nodeLink] },
      ]);
      assert.equal(failed.length, 1);
      assert.deepEqual(failed[0]?.entered ? failed[0].failures.map((f) => f.index) : 'not entered', [1]);
      assert.ok(!(await kernel.readNode()).links.some((l) => l.ifname === 'nl9a'));
      // Both parts succeed: both ran, each in its own namespace.
      const ok = await kernel.runInTurn([
        { ns: { side: 'pod', path: netnsPath(pod) }, ops: [{ op: 'linkUp', dev: 'lo' }] },
        { ns: NODE, ops: [nodeLink] },
      ]);
      assert.deepEqual(ok, [
        { entered: true, failures: [] },
        { entered: true, failures: [] },
      ]);
      assert.ok((await kernel.readNode()).links.some((l) => l.ifname === 'nl9a'));
      const podView = await kernel.readPod(netnsPath(pod));
      const lo = podView.reachable ? podView.links.find((l) => l.ifname === 'lo') : undefined;
      assert.ok(lo?.flags.includes('UP'), 'the pod part ran in the pod');
    });
  });
});

test('a helper that dies mid-flight fails what was in flight with the reason, and the next run restarts it', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    await withNetlinkKernel(netnsPath(node), async (kernel) => {
      await kernel.start();
      const pid = kernel.helperPid;
      assert.ok(pid !== undefined);
      // Stopped, it cannot answer: the request is surely in flight when the helper is killed.
      process.kill(pid, 'SIGSTOP');
      const inFlight = kernel.run({ side: 'node' }, [{ op: 'linkUp', dev: 'lo' }], 'stop');
      await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGKILL');
      await assert.rejects(
        inFlight,
        /netlink helper: .*vpcnet-netlink \(pid \d+\) was killed by SIGKILL; the request was not answered/,
      );
      const again = await kernel.run({ side: 'node' }, [{ op: 'linkUp', dev: 'lo' }], 'stop');
      assert.deepEqual(again, { entered: true, failures: [] });
      assert.equal(kernel.helperStarts, 2);
      assert.notEqual(kernel.helperPid, pid);
    });
  });
});

test('close ends the helper', async () => {
  await withNetnsCleanup(async (create) => {
    const node = await create('nl9-node-');
    const kernel = new NetlinkKernel({ program: NETLINK_HELPER, hostNetns: netnsPath(node) });
    await kernel.start();
    const pid = kernel.helperPid;
    assert.ok(pid !== undefined);
    await kernel.close();
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
  });
});
