// Adoption of aws-node's pods by the agent, end to end in-process (fake kernel, fake cloud, real
// ledger and pool): pods wired as aws-node wires them are recorded as vpcnet's with what was found,
// completed (SNAT element), their addresses held; what the checkpoint claims but the kernel does not
// confirm is left alone; aws-node's leftovers go; the runtime's DEL and CHECK work on adopted pods.
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import type { ForwardedRequest } from '../../cni/wire.ts';
import { planRegularPod } from '../../plan/pod-plan.ts';
import { agentWorlds } from '../testing/agent-world.ts';
import { cniRequest, ipOf } from '../testing/cni-request.ts';
import { awsNodeHostVethName } from './aws-node-names.ts';

const { world } = agentWorlds();

/** A request as the runtime sends it while its cached config still names aws-node's network. */
function asAwsCni(req: ForwardedRequest): ForwardedRequest {
  return { ...req, stdin: JSON.stringify({ cniVersion: '1.0.0', name: 'aws-cni', type: 'vpcnet' }) };
}

test("aws-node's pods are adopted in place; the unconfirmed are not; DEL and CHECK work on the adopted", async () => {
  const w = await world({ VPCNET_ADD_WAIT_SECONDS: '1' });
  // A first start only to learn the node's addresses; then the node is aws-node's (no ledger).
  const first = await w.start();
  const eni = first.pool.enis()[0]!;
  const free = [...first.pool.addresses(eni.eniId).keys()];
  await first.stop();
  await rm(join(w.dir, 'state'), { recursive: true, force: true });

  const netnsDir = join(w.dir, 'runtime-netns');
  await mkdir(netnsDir, { recursive: true });
  const pods = [
    { name: 'web-1', cid: 'c1', ip: free[0]! },
    { name: 'web-2', cid: 'c2', ip: free[1]! },
  ];
  // Wired by aws-node but not adoptable (its checkpoint says it has two interfaces): held instead.
  const multi = { name: 'multi', cid: 'c6', ip: free[3]! };
  for (const [i, p] of [...pods, multi].entries()) {
    const netns = join(netnsDir, `cni-${i}`);
    await writeFile(netns, '');
    w.kernel.ns(netns);
    // aws-node's wiring is vpcnet's regular plan with aws-node's names and MACs, and no SNAT element.
    const plan = planRegularPod({
      key: { network: 'aws-cni', containerId: p.cid, ifName: 'eth0' },
      vethPrefix: 'eni',
      ip: p.ip,
      eniId: eni.eniId,
      routeTable: 254,
      mtu: 9001,
      snat: false,
      foundVeth: {
        hostName: awsNodeHostVethName('eni', 'default', p.name),
        hostMac: `0a:00:00:00:00:0${i + 1}`,
        podMac: `0e:00:00:00:00:0${i + 1}`,
      },
    });
    await w.dataplane.create(netns, plan);
  }
  // Another node's pod in the same netns directory (a shared host in a lab) with web-1's address
  // behind another gateway MAC, listed first: it is not web-1's namespace.
  const decoy = join(netnsDir, 'a-decoy');
  await writeFile(decoy, '');
  w.kernel.ns(decoy);
  await w.dataplane.create(
    decoy,
    planRegularPod({
      key: { network: 'other', containerId: 'decoy', ifName: 'eth0' },
      vethPrefix: 'oth',
      ip: pods[0]!.ip,
      eniId: eni.eniId,
      routeTable: 254,
      mtu: 9001,
      snat: false,
    }).filter((r) => ('side' in r && r.side === 'pod') || r.kind === 'veth'),
  );
  w.kernel.awsNodeFirewall.push('iptables nat: -D POSTROUTING -j AWS-SNAT-CHAIN-0', 'nft table ip aws-cni');
  const entry = (cid: string, ip: string, name: string) => ({
    networkName: 'aws-cni',
    containerID: cid,
    ifName: 'eth0',
    ipv4: ip,
    allocationTimestamp: 1_700_000_000_000_000_000,
    metadata: { k8sPodNamespace: 'default', k8sPodName: name },
  });
  await mkdir(dirname(w.config.adoptAwsNode!.checkpoint), { recursive: true });
  await writeFile(
    w.config.adoptAwsNode!.checkpoint,
    JSON.stringify({
      version: 'vpc-cni-ipam/1',
      allocations: [
        ...pods.map((p) => entry(p.cid, p.ip, p.name)),
        // Claims the kernel does not confirm: no such veth; an address another entry's pod has.
        entry('c3', free[2]!, 'never-wired'),
        entry('c4', free[0]!, 'web-1'),
        {
          networkName: 'aws-cni',
          containerID: 'c5',
          ifName: 'eth0',
          ipv4: 'not-an-ip',
          allocationTimestamp: 1,
        },
        {
          ...entry(multi.cid, multi.ip, multi.name),
          metadata: { k8sPodNamespace: 'default', k8sPodName: multi.name, interfacesCount: 2 },
        },
      ],
    }),
  );

  const agent = await w.start({ runtimeNetnsDir: netnsDir });
  try {
    const adoption = agent.introspect().adoption as {
      adopted: { pod: string; ip: string }[];
      notAdopted: { containerId: string; reason: string }[];
      removed: string[];
    };
    assert.deepEqual(
      adoption.adopted.map((a) => [a.pod, a.ip]),
      pods.map((p) => [`default/${p.name}`, p.ip]),
    );
    assert.deepEqual(
      adoption.notAdopted.map((n) => n.containerId),
      ['allocations[4]', 'c3', 'c4', 'c6'],
    );
    assert.match(adoption.notAdopted.find((n) => n.containerId === 'c3')!.reason, /no host veth/);
    assert.match(adoption.notAdopted.find((n) => n.containerId === 'c4')!.reason, /already records/);
    assert.deepEqual(adoption.removed, [
      'iptables nat: -D POSTROUTING -j AWS-SNAT-CHAIN-0',
      'nft table ip aws-cni',
    ]);
    for (const p of pods) {
      assert.equal(agent.pool.state(p.ip)?.kind, 'assigned', `${p.ip} is held`);
      assert.ok(w.kernel.snatElements().includes(p.ip), `${p.ip} joined the SNAT set`);
      const att = agent.ledger.list().find((a) => a.key.containerId === p.cid)!;
      assert.equal(att.key.network, 'vpcnet');
      assert.equal(att.adopted?.from, 'aws-node');
      assert.equal(att.createdAt, 1_700_000_000_000);
      assert.notEqual(att.netns, decoy, 'the namespace behind the veth, not another with the address');
    }
    // Recovery holds nothing an adopted pod owns, and holds the pod that was not adopted by its veth.
    assert.deepEqual(
      agent.ledger.recovered().map((r) => [r.ip, r.resources.find((x) => x.kind === 'veth')?.hostName]),
      [[multi.ip, awsNodeHostVethName('eni', 'default', multi.name)]],
    );
    assert.equal(agent.pool.state(multi.ip)?.kind, 'assigned');
    assert.ok(w.kernel.hostRoute(multi.ip), "the held pod's route stays");
    // Not a pod's: the unconfirmed entry's address is lent again (after recovery's quarantine).
    assert.notEqual(agent.pool.state(free[2]!)?.kind, 'assigned');

    // New pods never get an adopted address.
    for (let i = 0; i < 3; i++) {
      const out = await agent.cni(
        cniRequest('ADD', `new${i}`, await w.netns(`new${i}`), `new${i}`, `nu${i}`),
      );
      if (out.exitCode !== 0) continue; // recovery's quarantine may leave no address yet
      assert.ok(!pods.some((p) => p.ip === ipOf(out.stdout)));
    }

    // CHECK and DEL of an adopted pod, named with aws-node's network as the runtime may still do.
    const [one, two] = pods;
    const check = await agent.cni(
      asAwsCni(cniRequest('CHECK', one!.cid, join(netnsDir, 'cni-0'), one!.name)),
    );
    assert.equal(check.exitCode, 0, check.stdout);
    const del = await agent.cni(asAwsCni(cniRequest('DEL', one!.cid, join(netnsDir, 'cni-0'), one!.name)));
    assert.equal(del.exitCode, 0, del.stdout);
    assert.ok(!w.kernel.veths().includes(awsNodeHostVethName('eni', 'default', one!.name)));
    assert.ok(!w.kernel.snatElements().includes(one!.ip));
    assert.equal(agent.pool.state(one!.ip)?.kind, 'cooling');
    assert.ok(
      w.kernel.veths().includes(awsNodeHostVethName('eni', 'default', two!.name)),
      'the other pod stays',
    );
  } finally {
    await agent.stop();
  }

  // A later start has a ledger: nothing is adopted again, the adopted pod is still held.
  const again = await w.start({ runtimeNetnsDir: netnsDir });
  try {
    assert.equal(again.introspect().adoption, undefined);
    assert.equal(again.pool.state(pods[1]!.ip)?.kind, 'assigned');
  } finally {
    await again.stop();
  }
});

test('a refused checkpoint adopts nothing and says why; the agent still starts', async () => {
  const w = await world();
  await mkdir(dirname(w.config.adoptAwsNode!.checkpoint), { recursive: true });
  await writeFile(
    w.config.adoptAwsNode!.checkpoint,
    JSON.stringify({ version: 'vpc-cni-ipam/2', allocations: [] }),
  );
  const agent = await w.start();
  try {
    const adoption = agent.introspect().adoption as { adopted: unknown[]; problems: string[] };
    assert.deepEqual(adoption.adopted, []);
    assert.match(adoption.problems[0]!, /version "vpc-cni-ipam\/2", expected "vpc-cni-ipam\/1"/);
  } finally {
    await agent.stop();
  }
});

test('VPCNET_ADOPT_AWS_NODE=false leaves the checkpoint unread', async () => {
  const w = await world({ VPCNET_ADOPT_AWS_NODE: 'false' });
  assert.equal(w.config.adoptAwsNode, undefined);
  const agent = await w.start();
  try {
    assert.equal(agent.introspect().adoption, undefined);
  } finally {
    await agent.stop();
  }
});
