// The dataplane on the Linux kernel driver, checked with the kernel's own tools (ip, nft) and with
// traffic. Each test builds its own "node" namespace (the node side runs there via hostNetns) and
// pod namespaces, and removes them all after. The scenario table that the fake kernel also passes
// is in dataplane-scenarios.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Dataplane } from '../../src/dataplane/dataplane.ts';
import { DataplaneError } from '../../src/dataplane/errors.ts';
import { IpCliKernel } from '../../src/dataplane/ip-cli/ip-cli-kernel.ts';
import { ENI } from '../../src/dataplane/testing/scenario-helpers.ts';
import type { AttachmentKey } from '../../src/plan/attachment.ts';
import { hostVethMac, hostVethName, podVethMac } from '../../src/plan/names.ts';
import { planRegularPod } from '../../src/plan/pod-plan.ts';
import type { Resource } from '../../src/plan/resource.ts';
import {
  execIn,
  mustExecIn,
  netnsPath,
  plantEniLink,
  removeNetns,
  withNetnsCleanup,
} from '../netns-fixture.ts';

type Create = (prefix: string) => Promise<string>;
type Json = Record<string, unknown>;

const NODE_LOCAL_IP = '10.99.0.1';
const VPC = { vpcCidrs: ['10.0.0.0/16'], snatSource: '10.200.0.1' };
const oldSandbox: AttachmentKey = { network: 'vpcnet', containerId: 'a279aaaa0001', ifName: 'eth0' };
const newSandbox: AttachmentKey = { network: 'vpcnet', containerId: '30c8bbbb0002', ifName: 'eth0' };

/** A node namespace with an address on lo (something for pods to reach) and a dataplane driving it. */
async function makeNode(create: Create): Promise<{ node: string; dp: Dataplane; kernel: IpCliKernel }> {
  const node = await create('vpcdp-node-');
  await mustExecIn(node, ['ip', 'addr', 'add', `${NODE_LOCAL_IP}/32`, 'dev', 'lo']);
  const kernel = new IpCliKernel({ hostNetns: netnsPath(node) });
  return { node, dp: new Dataplane(kernel), kernel };
}

interface PodPlan {
  readonly netns: string;
  readonly hostVeth: string;
  readonly hostMac: string;
  readonly resources: Resource[];
}

function planFor(
  pod: string,
  key: AttachmentKey,
  ip: string,
  over: { routeTable?: number; snat?: boolean; netns?: string } = {},
): PodPlan {
  return {
    netns: over.netns ?? netnsPath(pod),
    hostVeth: hostVethName(key),
    hostMac: hostVethMac(key),
    resources: planRegularPod({
      key,
      vethPrefix: 'vpc',
      ip,
      eniId: 'eni-1',
      routeTable: over.routeTable ?? 2,
      mtu: 9001,
      snat: over.snat ?? false,
    }),
  };
}

async function problems(dp: Dataplane, p: PodPlan): Promise<string[]> {
  const seen = await dp.inspect(p.netns, p.resources);
  return [
    ...(seen.podUnreachable === undefined
      ? []
      : [`pod netns ${p.netns} unreachable: ${seen.podUnreachable}`]),
    ...seen.findings.map((f) => f.problem),
  ];
}

async function ipJson(ns: string, args: readonly string[]): Promise<Json[]> {
  const r = await mustExecIn(ns, ['ip', '-j', ...args]);
  return JSON.parse(r.stdout || '[]') as Json[];
}

async function linkExists(ns: string, name: string): Promise<boolean> {
  return (await execIn(ns, ['ip', 'link', 'show', 'dev', name])).code === 0;
}

/** Rules whose selector names the address (raw `ip -j rule` objects). */
async function rulesFor(node: string, ip: string): Promise<Json[]> {
  return (await ipJson(node, ['rule', 'show'])).filter((r) => r.src === ip || r.dst === ip);
}

async function snatElements(node: string): Promise<string[]> {
  const r = await execIn(node, ['nft', '-j', 'list', 'set', 'ip', 'vpcnet', 'snat_pods']);
  if (r.code !== 0) return [];
  const items = (JSON.parse(r.stdout) as { nftables: Json[] }).nftables;
  const set = items.find((i) => i.set !== undefined)?.set as { elem?: string[] } | undefined;
  return set?.elem ?? [];
}

/**
 * A TCP handshake to ip:port from ns gets an answer: a connection, or a RST from a closed port —
 * either way a packet went there and the answer came back.
 */
async function reaches(ns: string, ip: string, port = 9): Promise<boolean> {
  const r = await execIn(ns, ['timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/${ip}/${port}`]);
  return r.code === 0 || /Connection refused/.test(r.stderr);
}

async function eventually(check: () => Promise<boolean>, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

test('create builds eth0 with a /32, a default route via 169.254.1.1 with a permanent neighbour, and an up host veth with route and rules', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp, kernel } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5');
    const before = kernel.commandsRun;
    await dp.create(p.netns, p.resources);
    assert.ok(kernel.commandsRun - before <= 3, `create ran ${kernel.commandsRun - before} processes`);

    const [eth0] = await ipJson(pod, ['addr', 'show', 'dev', 'eth0']);
    assert.ok(eth0);
    assert.equal(eth0.mtu, 9001);
    assert.ok((eth0.flags as string[]).includes('UP'));
    const inet = (eth0.addr_info as Json[]).filter((a) => a.family === 'inet');
    assert.deepEqual(
      inet.map((a) => `${a.local}/${a.prefixlen}`),
      ['10.0.0.5/32'],
    );
    assert.equal(eth0.address, podVethMac(oldSandbox), 'the pod interface has the MAC the result reports');
    assert.deepEqual(await ipJson(pod, ['route', 'show', 'default']), [
      { dst: 'default', gateway: '169.254.1.1', dev: 'eth0', flags: [] },
    ]);
    const [neigh] = await ipJson(pod, ['neigh', 'show', '169.254.1.1', 'dev', 'eth0']);
    assert.equal(neigh?.lladdr, p.hostMac);
    assert.deepEqual(neigh?.state, ['PERMANENT']);

    const [veth] = await ipJson(node, ['link', 'show', 'dev', p.hostVeth]);
    assert.ok(veth, 'host veth exists in the node namespace');
    assert.ok((veth.flags as string[]).includes('UP'));
    assert.equal(veth.address, p.hostMac);
    assert.deepEqual(await ipJson(node, ['route', 'show', 'table', 'main', '10.0.0.5/32']), [
      { dst: '10.0.0.5', dev: p.hostVeth, scope: 'link', flags: [] },
    ]);
    const rules = await rulesFor(node, '10.0.0.5');
    assert.deepEqual(
      rules.map((r) => [r.priority, r.src, r.dst, r.table]),
      [
        [512, 'all', '10.0.0.5', 'main'],
        [1536, '10.0.0.5', undefined, '2'],
      ],
    );
    assert.deepEqual(await problems(dp, p), []);
  });
});

test('a pod on the main table gets no from-rule, and a pod netns given as a /proc path works', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    // A runtime may pass any path to the namespace (containerd: its state dir); /proc/<pid>/ns/net is one.
    const holder = await mustExecIn(pod, ['bash', '-c', 'sleep 30 >/dev/null 2>&1 & echo $!']);
    const pid = Number(holder.stdout.trim());
    try {
      const p = planFor(pod, oldSandbox, '10.0.0.5', { netns: `/proc/${pid}/ns/net`, routeTable: 254 });
      await dp.create(p.netns, p.resources);
      assert.equal(p.resources.filter((r) => r.kind === 'rule').length, 1);
      assert.deepEqual(
        (await rulesFor(node, '10.0.0.5')).map((r) => r.priority),
        [512],
      );
      assert.ok(await linkExists(pod, 'eth0'));
      assert.deepEqual(await problems(dp, p), []);
    } finally {
      process.kill(pid);
    }
  });
});

test('without hostNetns (production), the host end lands in the namespace the agent runs in', async () => {
  await withNetnsCleanup(async (create) => {
    const { node } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5');
    // The agent process itself runs inside the node namespace, as vpcnetd does on a node.
    const src = (f: string) => JSON.stringify(new URL(`../../src/dataplane/${f}`, import.meta.url).pathname);
    const script = [
      `import { Dataplane } from ${src('dataplane.ts')};`,
      `import { IpCliKernel } from ${src('ip-cli/ip-cli-kernel.ts')};`,
      'const dp = new Dataplane(new IpCliKernel());',
      'const [netns, resources] = JSON.parse(process.argv[1]);',
      'await dp.create(netns, resources);',
      'console.log(JSON.stringify((await dp.inspect(netns, resources)).findings));',
    ].join('\n');
    const r = await mustExecIn(node, [
      'node',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
      JSON.stringify([p.netns, p.resources]),
    ]);
    assert.deepEqual(JSON.parse(r.stdout), []);
    assert.ok(await linkExists(node, p.hostVeth));
    assert.ok(await reaches(pod, NODE_LOCAL_IP));
  });
});

test('pod and node reach each other through the veth', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5');
    await dp.create(p.netns, p.resources);
    assert.ok(await reaches(pod, NODE_LOCAL_IP), 'pod -> node');
    assert.ok(await reaches(node, '10.0.0.5'), 'node -> pod');
    assert.equal(await reaches(pod, '10.99.0.77'), false, 'an address nobody has is not reachable');
  });
});

test('stale DEL for a replaced sandbox keeps the new sandbox working (two container IDs, two host veths)', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const oldPod = await create('vpcdp-pod-');
    const newPod = await create('vpcdp-pod-');
    const oldPlan = planFor(oldPod, oldSandbox, '10.0.0.5');
    const newPlan = planFor(newPod, newSandbox, '10.0.0.6');
    await dp.create(oldPlan.netns, oldPlan.resources);
    await dp.create(newPlan.netns, newPlan.resources);
    assert.notEqual(oldPlan.hostVeth, newPlan.hostVeth);
    assert.ok(await linkExists(node, oldPlan.hostVeth));
    assert.ok(await linkExists(node, newPlan.hostVeth));

    await dp.remove(oldPlan.resources);
    assert.equal(await linkExists(node, oldPlan.hostVeth), false);
    assert.deepEqual(await rulesFor(node, '10.0.0.5'), []);
    assert.ok(await reaches(newPod, NODE_LOCAL_IP), 'new sandbox -> node');
    assert.ok(await reaches(node, '10.0.0.6'), 'node -> new sandbox');
    assert.deepEqual(await problems(dp, newPlan), []);
  });
});

test('remove deletes the pod end with the host end, and the host route, rules and SNAT element with them', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    await dp.setupNode(VPC);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5', { snat: true });
    await dp.create(p.netns, p.resources);
    assert.deepEqual(await snatElements(node), ['10.0.0.5']);
    await dp.remove(p.resources);
    assert.equal(await linkExists(node, p.hostVeth), false);
    assert.equal(await linkExists(pod, 'eth0'), false, 'deleting the host end removed the pod end');
    assert.deepEqual(await rulesFor(node, '10.0.0.5'), []);
    assert.deepEqual(await ipJson(node, ['route', 'show', 'table', 'main', '10.0.0.5/32']), []);
    assert.deepEqual(await snatElements(node), []);
    await dp.remove(p.resources);
  });
});

test('remove after the pod netns was deleted succeeds and leaves no rule or SNAT element behind', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    await dp.setupNode(VPC);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5', { snat: true });
    await dp.create(p.netns, p.resources);
    await removeNetns(pod);
    // The kernel dismantles a deleted namespace asynchronously.
    assert.ok(
      await eventually(async () => !(await linkExists(node, p.hostVeth))),
      'the veth died with the namespace',
    );
    assert.equal((await rulesFor(node, '10.0.0.5')).length, 2, 'rules outlive the namespace');
    await dp.remove(p.resources);
    assert.deepEqual(await rulesFor(node, '10.0.0.5'), []);
    assert.deepEqual(await snatElements(node), []);
  });
});

test('remove reports a real failure instead of calling it gone', async () => {
  await withNetnsCleanup(async (create) => {
    const { dp } = await makeNode(create);
    // Deleting the loopback is refused by the kernel (EINVAL/EOPNOTSUPP): not "already gone".
    const lo: Resource = {
      kind: 'veth',
      hostName: 'lo',
      hostMac: '02:00:00:00:00:01',
      podIfName: 'eth0',
      mtu: 1,
    };
    await assert.rejects(dp.remove([lo]), (err: unknown) => {
      assert.ok(err instanceof DataplaneError);
      assert.match(err.step, /link del lo/);
      return true;
    });
  });
});

test('a failure mid-create rolls back what this create did and keeps what it did not create', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    // Someone else's rule with the same selector: our `rule add from` fails with EEXIST.
    await mustExecIn(node, ['ip', 'rule', 'add', 'from', '10.0.0.5/32', 'lookup', '2', 'prio', '1536']);
    const p = planFor(pod, oldSandbox, '10.0.0.5');
    await assert.rejects(dp.create(p.netns, p.resources), (err: unknown) => {
      assert.ok(err instanceof DataplaneError);
      assert.equal(err.step, 'rule add from 10.0.0.5/32 lookup 2 prio 1536');
      assert.equal(err.hostVeth, p.hostVeth);
      assert.match(err.kernelMessage, /File exists/);
      assert.match(err.message, new RegExp(p.hostVeth));
      return true;
    });
    assert.equal(await linkExists(node, p.hostVeth), false, 'host veth rolled back');
    assert.equal(await linkExists(pod, 'eth0'), false, 'pod interface rolled back');
    assert.deepEqual(
      (await rulesFor(node, '10.0.0.5')).map((r) => [r.priority, r.src]),
      [[1536, '10.0.0.5']],
      'our to-rule is gone; the pre-existing from-rule (not ours) is kept',
    );
  });
});

test('create fails at the SNAT step when the node was never set up, and leaves nothing behind', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5', { snat: true });
    await assert.rejects(
      dp.create(p.netns, p.resources),
      /step "nft add element ip vpcnet snat_pods \{ 10\.0\.0\.5 \}" failed/,
    );
    assert.equal(await linkExists(node, p.hostVeth), false);
    assert.equal(await linkExists(pod, 'eth0'), false);
    assert.deepEqual(await rulesFor(node, '10.0.0.5'), []);
  });
});

test('create never deletes an existing link that has the host veth name (not ours)', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5');
    await mustExecIn(node, ['ip', 'link', 'add', p.hostVeth, 'type', 'veth', 'peer', 'name', 'squatter1']);
    await assert.rejects(dp.create(p.netns, p.resources), (err: unknown) => {
      assert.ok(err instanceof DataplaneError);
      assert.match(err.step, /^link add eth0 /);
      return true;
    });
    assert.ok(await linkExists(node, p.hostVeth), 'the existing link survives');
    assert.equal(await linkExists(pod, 'eth0'), false);
  });
});

test('drift made with ip and nft by hand is found: neighbour state, rule, SNAT element, a deleted veth', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    await dp.setupNode(VPC);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5', { snat: true });
    await dp.create(p.netns, p.resources);
    assert.deepEqual(await problems(dp, p), []);

    await mustExecIn(node, ['ip', 'rule', 'del', 'from', '10.0.0.5/32', 'lookup', '2', 'prio', '1536']);
    await mustExecIn(node, ['nft', 'delete', 'element', 'ip', 'vpcnet', 'snat_pods', '{ 10.0.0.5 }']);
    await mustExecIn(pod, [
      'ip',
      'neigh',
      'replace',
      '169.254.1.1',
      'dev',
      'eth0',
      'lladdr',
      p.hostMac,
      'nud',
      'reachable',
    ]);
    assert.deepEqual(await problems(dp, p), [
      'neighbour 169.254.1.1 not permanent',
      'rule from 10.0.0.5 lookup 2 prio 1536 missing',
      'snat element 10.0.0.5 missing',
    ]);

    await mustExecIn(node, ['ip', 'link', 'del', p.hostVeth]);
    const gone = await problems(dp, p);
    assert.ok(gone.includes('pod interface eth0 missing'), gone.join('\n'));
    assert.ok(gone.includes(`host veth ${p.hostVeth} missing`), gone.join('\n'));
    assert.ok(gone.includes(`host route 10.0.0.5 dev ${p.hostVeth} missing`), gone.join('\n'));
  });
});

test('inspect reports a vanished pod netns instead of failing', async () => {
  await withNetnsCleanup(async (create) => {
    const { dp } = await makeNode(create);
    const p = planFor('vpcdp-missing-ns', oldSandbox, '10.0.0.5');
    const found = await problems(dp, p);
    assert.match(found[0] ?? '', /^pod netns \/var\/run\/netns\/vpcdp-missing-ns unreachable/);
    assert.ok(found.includes(`host veth ${p.hostVeth} missing`));
  });
});

/** A node with an uplink to an "outside" namespace that has no route back to pod addresses. */
async function makeUplink(create: Create, node: string): Promise<string> {
  const out = await create('vpcdp-out-');
  await mustExecIn(node, [
    'ip',
    'link',
    'add',
    'up0',
    'type',
    'veth',
    'peer',
    'name',
    'up1',
    'netns',
    netnsPath(out),
  ]);
  await mustExecIn(node, ['ip', 'addr', 'add', '10.200.0.1/24', 'dev', 'up0']);
  await mustExecIn(node, ['ip', 'link', 'set', 'up0', 'up']);
  await mustExecIn(node, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  await mustExecIn(out, ['ip', 'addr', 'add', '10.200.0.2/24', 'dev', 'up1']);
  await mustExecIn(out, ['ip', 'link', 'set', 'up1', 'up']);
  // Counters of arriving TCP SYNs by source address, to see what the outside sees.
  await mustExecIn(
    out,
    ['nft', '-f', '-'],
    [
      'add table ip seen',
      'add chain ip seen in { type filter hook input priority 0; }',
      'add rule ip seen in ip saddr 10.200.0.1 tcp dport 9 counter',
      'add rule ip seen in ip saddr 10.0.0.5 tcp dport 9 counter',
      '',
    ].join('\n'),
  );
  return out;
}

async function seenFrom(out: string): Promise<Record<string, number>> {
  const r = await mustExecIn(out, ['nft', '-j', 'list', 'chain', 'ip', 'seen', 'in']);
  const items = (JSON.parse(r.stdout) as { nftables: Json[] }).nftables;
  const seen: Record<string, number> = {};
  for (const item of items) {
    const expr = (item.rule as { expr?: Json[] } | undefined)?.expr;
    if (!expr) continue;
    const saddr = expr
      .map((e) => (e.match as { right?: unknown } | undefined)?.right)
      .find((v) => typeof v === 'string');
    const counter = expr.find((e) => e.counter)?.counter as { packets: number } | undefined;
    if (typeof saddr === 'string' && counter) seen[saddr] = counter.packets;
  }
  return seen;
}

test('setupNode is idempotent, and SNAT rewrites the source of pod traffic leaving the VPC only', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const out = await makeUplink(create, node);
    await dp.setupNode(VPC);
    await dp.setupNode(VPC);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5', { snat: true });
    await dp.create(p.netns, p.resources);
    const listing = (await mustExecIn(node, ['nft', 'list', 'chain', 'ip', 'vpcnet', 'postrouting'])).stdout;
    assert.equal(listing.match(/snat to/g)?.length, 1, listing);

    // Outside the VPC: the outside sees the node's address, and the answer finds its way back.
    assert.ok(await reaches(pod, '10.200.0.2'), 'SNATed connection answered');
    let seen = await seenFrom(out);
    assert.ok((seen['10.200.0.1'] ?? 0) > 0, JSON.stringify(seen));
    assert.equal(seen['10.0.0.5'], 0);

    // The uplink's subnet becomes part of the VPC: no SNAT, the pod's own address arrives, and the
    // outside (no route to pods) cannot answer. setupNode replaces the rule; the pod stays in the set.
    await dp.setupNode({ ...VPC, vpcCidrs: ['10.0.0.0/16', '10.200.0.0/24'] });
    assert.deepEqual(await snatElements(node), ['10.0.0.5']);
    const before = seen['10.200.0.1'] ?? 0;
    assert.equal(await reaches(pod, '10.200.0.2'), false);
    seen = await seenFrom(out);
    assert.ok((seen['10.0.0.5'] ?? 0) > 0, JSON.stringify(seen));
    assert.equal(seen['10.200.0.1'], before);
  });
});

test('setupNode never touches other nftables tables', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    await mustExecIn(node, ['nft', 'add', 'table', 'ip', 'other']);
    await mustExecIn(node, ['nft', 'add', 'chain', 'ip', 'other', 'c']);
    await dp.setupNode(VPC);
    const tables = (await mustExecIn(node, ['nft', 'list', 'tables'])).stdout.trim().split('\n');
    assert.deepEqual(tables.sort(), ['table ip other', 'table ip vpcnet']);
    assert.match((await mustExecIn(node, ['nft', 'list', 'table', 'ip', 'other'])).stdout, /chain c/);
  });
});

test('setupEni finds the ENI link by MAC and gives it its address, route table and rule, idempotently', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    const mac = '02:0e:0e:00:00:01';
    await plantEniLink(node, 'ens6', mac);
    const eni = {
      mac: mac.toUpperCase(),
      deviceNumber: 1,
      primaryIp: '10.0.1.10',
      subnetCidr: '10.0.1.0/24',
      gateway: '10.0.1.1',
      routeTable: 2,
      mtu: 9001,
    };
    for (let i = 0; i < 2; i++) {
      assert.equal(await dp.setupEni(eni), 'ens6');
      const [link] = await ipJson(node, ['addr', 'show', 'dev', 'ens6']);
      assert.ok(link);
      assert.ok((link.flags as string[]).includes('UP'));
      assert.equal(link.mtu, 9001);
      assert.deepEqual(
        (link.addr_info as Json[]).filter((a) => a.family === 'inet').map((a) => `${a.local}/${a.prefixlen}`),
        ['10.0.1.10/32'],
      );
      assert.deepEqual(await ipJson(node, ['route', 'show', 'table', '2']), [
        { dst: 'default', gateway: '10.0.1.1', dev: 'ens6', flags: [] },
        { dst: '10.0.1.1', dev: 'ens6', scope: 'link', flags: [] },
      ]);
      assert.deepEqual(
        (await rulesFor(node, '10.0.1.10')).map((r) => [r.priority, r.table]),
        [[1536, '2']],
      );
    }
    await assert.rejects(
      dp.setupEni({ ...eni, mac: '02:0e:0e:00:00:99' }),
      /no link has MAC 02:0e:0e:00:00:99/,
    );
  });
});

test('teardownEni after setupEni leaves no route in its table and no rule for the ENI address, keeps another ENI, and succeeds twice', async () => {
  await withNetnsCleanup(async (create) => {
    const { node, dp } = await makeNode(create);
    await plantEniLink(node, 'ens6', '02:0e:0e:00:00:01');
    await plantEniLink(node, 'ens7', '02:0e:0e:00:00:02');
    const eni = ENI;
    const other = {
      ...eni,
      mac: '02:0e:0e:00:00:02',
      deviceNumber: 2,
      primaryIp: '10.0.1.11',
      routeTable: 3,
    };
    await dp.setupEni(eni);
    await dp.setupEni(other);
    const mainBefore = await ipJson(node, ['route', 'show', 'table', 'main']);
    for (let i = 0; i < 2; i++) {
      await dp.teardownEni(eni);
      assert.deepEqual(await ipJson(node, ['route', 'show', 'table', '2']), []);
      assert.deepEqual(await rulesFor(node, '10.0.1.10'), []);
      const [link] = await ipJson(node, ['addr', 'show', 'dev', 'ens6']);
      assert.ok(link);
      assert.deepEqual(
        (link.addr_info as Json[]).filter((a) => a.family === 'inet'),
        [],
        'the /32 is gone',
      );
      assert.equal(
        (await ipJson(node, ['route', 'show', 'table', '3'])).length,
        2,
        'the other ENI keeps its table',
      );
      assert.deepEqual(
        (await rulesFor(node, '10.0.1.11')).map((r) => [r.priority, r.table]),
        [[1536, '3']],
      );
      assert.deepEqual(await ipJson(node, ['route', 'show', 'table', 'main']), mainBefore);
    }
    await mustExecIn(node, ['ip', 'link', 'del', 'ens6']);
    await dp.teardownEni(eni);
  });
});

test('create and remove stay within their process budget (timings in the output)', async (t) => {
  await withNetnsCleanup(async (create) => {
    const { node, dp, kernel } = await makeNode(create);
    await dp.setupNode(VPC);
    const pod = await create('vpcdp-pod-');
    const p = planFor(pod, oldSandbox, '10.0.0.5', { snat: true });
    const add: number[] = [];
    const del: number[] = [];
    const addProcs: number[] = [];
    const delProcs: number[] = [];
    for (let i = 0; i < 20; i++) {
      let n = kernel.commandsRun;
      let t0 = performance.now();
      await dp.create(p.netns, p.resources);
      add.push(performance.now() - t0);
      addProcs.push(kernel.commandsRun - n);
      n = kernel.commandsRun;
      t0 = performance.now();
      await dp.remove(p.resources);
      del.push(performance.now() - t0);
      delProcs.push(kernel.commandsRun - n);
    }
    assert.ok(Math.max(...addProcs) <= 3, `create processes: ${addProcs}`);
    assert.ok(Math.max(...delProcs) <= 2, `remove processes: ${delProcs}`);
    assert.equal(await linkExists(node, p.hostVeth), false);
    t.diagnostic(
      `create median ${median(add).toFixed(1)} ms (${addProcs[0]} processes), ` +
        `remove median ${median(del).toFixed(1)} ms (${delProcs[0]} processes), n=20, snat on, table 2`,
    );
  });
});
