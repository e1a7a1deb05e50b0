// Scenarios of pod plans: create, remove, drift, repair (see scenarios.ts).
import assert from 'node:assert/strict';
import { planIpv6Pod } from '../../plan/ipv6-pod-plan.ts';
import { hostVethMac } from '../../plan/names.ts';
import { DataplaneError } from '../errors.ts';
import { hostVeth, NODE, nodeRulesFor, plan, problems, until } from './scenario-helpers.ts';
import type { Scenario } from './scenarios.ts';

export const podScenarios: readonly Scenario[] = [
  {
    name: 'a pod plan is created in full and inspects clean, on both sides',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      await h.dataplane.create(netns, a);
      assert.deepEqual(await problems(h, netns, a), []);
      const pod = await h.dataplane.observePod(netns);
      assert.ok(pod.reachable);
      const eth0 = pod.links.find((l) => l.ifname === 'eth0');
      assert.deepEqual(
        eth0?.addresses.filter((x) => x.family === 'inet'),
        [{ family: 'inet', local: '10.0.0.5', prefixlen: 32 }],
      );
      assert.equal(eth0?.mtu, 9001);
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), ['1536 10.0.0.5 - 2', '512 all 10.0.0.5 254']);
    },
  },
  {
    name: 'a second interface of the pod is built beside the first, in either order, and its removal leaves the first whole',
    async run(h) {
      for (const order of ['eth0 first', 'eth1 first']) {
        const netns = await h.pod();
        const first = plan('c-a', '10.0.0.5');
        const second = plan('c-a', '10.0.0.6', 2, 'eth1');
        for (const p of order === 'eth0 first' ? [first, second] : [second, first]) {
          await h.dataplane.create(netns, p);
        }
        assert.deepEqual(await problems(h, netns, first), [], order);
        assert.deepEqual(await problems(h, netns, second), [], order);
        const podRules = async () => {
          const pod = await h.dataplane.observePod(netns);
          assert.ok(pod.reachable);
          return pod.rules.filter((r) => r.src === '10.0.0.6').map((r) => `${r.priority} ${r.table}`);
        };
        assert.equal((await podRules()).length, 1, 'the second interface has its rule in the pod');
        await h.dataplane.remove(second, { netns });
        assert.deepEqual(await problems(h, netns, first), [], `${order}: eth0 after eth1's removal`);
        assert.deepEqual(await podRules(), [], 'its pod rule went with it');
        assert.deepEqual(await nodeRulesFor(h, '10.0.0.6'), []);
        await h.dataplane.remove(first, { netns });
      }
    },
  },
  {
    name: 'a host veth name that exists fails the create at its first step and is left alone',
    async run(h) {
      const [first, second] = [await h.pod(), await h.pod()];
      const a = plan('c-a', '10.0.0.5');
      await h.dataplane.create(first, a);
      // Same key, so the same host veth name, built into another namespace with another address.
      await assert.rejects(h.dataplane.create(second, plan('c-a', '10.0.0.6')), /File exists/);
      assert.deepEqual(await problems(h, first, a), []);
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.6'), []);
    },
  },
  {
    name: 'a failure mid-create removes what this create made and keeps what it did not',
    async run(h) {
      const netns = await h.pod();
      const theirs = { priority: 1536, from: '10.0.0.5/32', table: 2 };
      await h.byHand(NODE, [{ op: 'ruleAdd', rule: theirs }]);
      const a = plan('c-a', '10.0.0.5');
      await assert.rejects(h.dataplane.create(netns, a), (err: unknown) => {
        assert.ok(err instanceof DataplaneError);
        assert.equal(err.step, 'rule add from 10.0.0.5/32 lookup 2 prio 1536');
        assert.match(err.kernelMessage, /File exists/);
        assert.equal(err.hostVeth, hostVeth(a));
        return true;
      });
      const node = await h.dataplane.observeNode();
      assert.equal(
        node.links.find((l) => l.ifname === hostVeth(a)),
        undefined,
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), ['1536 10.0.0.5 - 2']);
      assert.deepEqual(node.snatElements, []);
      const pod = await h.dataplane.observePod(netns);
      assert.ok(pod.reachable);
      assert.equal(
        pod.links.find((l) => l.ifname === 'eth0'),
        undefined,
      );
    },
  },
  {
    name: 'a create needing the SNAT set before the node is set up fails and leaves nothing behind',
    nodeSetUp: false,
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      await assert.rejects(h.dataplane.create(netns, a), /No such file or directory/);
      const node = await h.dataplane.observeNode();
      assert.equal(
        node.links.find((l) => l.ifname === hostVeth(a)),
        undefined,
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), []);
    },
  },
  {
    name: 'remove removes exactly the given resources, and a second time succeeds',
    async run(h) {
      const [pa, pb] = [await h.pod(), await h.pod()];
      const a = plan('c-a', '10.0.0.5');
      const b = plan('c-b', '10.0.0.6');
      await h.dataplane.create(pa, a);
      await h.dataplane.create(pb, b);
      await h.dataplane.remove(a);
      await h.dataplane.remove(a);
      const node = await h.dataplane.observeNode();
      assert.equal(
        node.links.find((l) => l.ifname === hostVeth(a)),
        undefined,
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), []);
      assert.deepEqual(node.snatElements, ['10.0.0.6']);
      assert.deepEqual(await problems(h, pb, b), []);
    },
  },
  {
    name: 'a deleted pod namespace takes the veth with it; remove then succeeds and leaves no rule or SNAT element',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      await h.dataplane.create(netns, a);
      await h.deleteNetns(netns);
      // The kernel destroys the namespace's veths shortly after the last reference goes.
      await until(async () => !(await h.dataplane.observeNode()).links.some((l) => l.ifname === hostVeth(a)));
      assert.deepEqual(await problems(h, netns, a), [
        'pod unreachable',
        `host veth ${hostVeth(a)} missing`,
        `host route 10.0.0.5 dev ${hostVeth(a)} missing`,
      ]);
      await h.dataplane.remove(a);
      assert.deepEqual(await nodeRulesFor(h, '10.0.0.5'), []);
      assert.deepEqual((await h.dataplane.observeNode()).snatElements, []);
      await assert.rejects(h.dataplane.create(netns, a), /nsenter/);
    },
  },
  {
    name: 'drift made by hand is found in plan order, in the words CHECK uses',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      const veth = hostVeth(a);
      await h.dataplane.create(netns, a);
      await h.byHand(NODE, [
        { op: 'ruleDel', rule: { priority: 1536, from: '10.0.0.5/32', table: 2 } },
        { op: 'snatDel', ip: '10.0.0.5' },
      ]);
      assert.deepEqual(await problems(h, netns, a), [
        'rule from 10.0.0.5 lookup 2 prio 1536 missing',
        'snat element 10.0.0.5 missing',
      ]);
      // Removing the pod's only address takes its routes and neighbour; a downed link its routes.
      await h.byHand({ side: 'pod', path: netns }, [{ op: 'addrDel', dev: 'eth0', cidr: '10.0.0.5/32' }]);
      await h.setLinkDown(NODE, veth);
      assert.deepEqual(await problems(h, netns, a), [
        `host veth ${veth} down`,
        'address 10.0.0.5/32 missing on eth0',
        'route 169.254.1.1 dev eth0 missing',
        'route default via 169.254.1.1 dev eth0 missing',
        'neighbour 169.254.1.1 missing',
        `host route 10.0.0.5 dev ${veth} missing`,
        'rule from 10.0.0.5 lookup 2 prio 1536 missing',
        'snat element 10.0.0.5 missing',
      ]);
    },
  },
  {
    name: 'repair restores what drift took; a missing veth can only be built again',
    async run(h) {
      const netns = await h.pod();
      const a = plan('c-a', '10.0.0.5');
      const veth = hostVeth(a);
      await h.dataplane.create(netns, a);
      await h.byHand(NODE, [{ op: 'ruleDel', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } }]);
      await h.byHand({ side: 'pod', path: netns }, [{ op: 'addrDel', dev: 'eth0', cidr: '10.0.0.5/32' }]);
      await h.setLinkDown(NODE, veth);
      const seen = await h.dataplane.inspect(netns, a);
      await h.dataplane.repair(netns, seen.findings);
      assert.deepEqual(await problems(h, netns, a), []);
      await h.byHand(NODE, [{ op: 'linkDel', dev: veth }]);
      const gone = await h.dataplane.inspect(netns, a);
      assert.ok(gone.findings.some((f) => f.repair === undefined));
      await assert.rejects(h.dataplane.repair(netns, gone.findings), /missing/);
      await h.dataplane.remove(a);
      await h.dataplane.create(netns, a);
      assert.deepEqual(await problems(h, netns, a), []);
    },
  },
  {
    name: 'an IPv6 pod plan with IPv4 egress is created, read back in both families, repaired after drift, removed whole',
    async run(h) {
      const netns = await h.pod();
      const key = { network: 'vpcnet', containerId: 'c-v6', ifName: 'eth0' };
      const v6 = planIpv6Pod({
        key,
        vethPrefix: 'vpc',
        ip: '2001:db8::5',
        eniId: 'eni-1',
        mtu: 9001,
        v4EgressIp: '169.254.172.2',
      });
      await h.dataplane.create(netns, v6);
      assert.deepEqual(await problems(h, netns, v6), []);
      const pod = await h.dataplane.observePod(netns);
      assert.ok(pod.reachable);
      const eth0 = pod.links.find((l) => l.ifname === 'eth0');
      assert.deepEqual(
        eth0?.addresses.filter((x) => x.family === 'inet6' && !x.local.startsWith('fe80:')),
        [{ family: 'inet6', local: '2001:db8::5', prefixlen: 128 }],
      );
      assert.ok(pod.routes.some((r) => r.dst === 'default' && r.gateway === 'fe80::1' && r.metric === 1024));
      const veth = hostVeth(v6);
      await h.byHand(NODE, [{ op: 'routeDel', dst: '2001:db8::5/128', dev: veth, table: 254 }]);
      await h.byHand({ side: 'pod', path: netns }, [
        { op: 'neighAdd', dev: 'eth0', ip: 'fe80::1', lladdr: '02:00:00:00:00:99', replace: true },
      ]);
      assert.deepEqual(await problems(h, netns, v6), [
        `neighbour fe80::1 points to 02:00:00:00:00:99, not ${hostVethMac(key)}`,
        `host route 2001:db8::5 dev ${veth} metric 1024 missing`,
      ]);
      await h.dataplane.repair(netns, (await h.dataplane.inspect(netns, v6)).findings);
      assert.deepEqual(await problems(h, netns, v6), []);
      await h.dataplane.remove(v6);
      const node = await h.dataplane.observeNode();
      assert.deepEqual(
        node.links.filter((l) => l.ifname.startsWith('vpc')).map((l) => l.ifname),
        [],
        'both veths gone, and their routes with them',
      );
      assert.ok(!node.routes.some((r) => r.dst === '2001:db8::5' || r.dst === '169.254.172.2'));
    },
  },
];
