// Scenarios of the node's own configuration: ENI links and garbage collection (see scenarios.ts).
import assert from 'node:assert/strict';
import type { EniLinkSpec } from '../../plan/eni-plan.ts';
import { findOrphans, identityOf } from '../../plan/kinds.ts';
import { ENI, hostVeth, NODE, nodeRulesFor, plan, problems } from './scenario-helpers.ts';
import type { Scenario } from './scenarios.ts';

export const nodeScenarios: readonly Scenario[] = [
  {
    name: 'setupEni finds the link by MAC, configures it idempotently and refuses an unknown MAC',
    async run(h) {
      await h.addNodeLink('eni1', ENI.mac);
      assert.equal(await h.dataplane.setupEni(ENI), 'eni1');
      assert.equal(await h.dataplane.setupEni(ENI), 'eni1');
      const node = await h.dataplane.observeNode();
      const link = node.links.find((l) => l.ifname === 'eni1');
      assert.ok(link?.flags.includes('UP'));
      assert.equal(link?.mtu, 9001);
      assert.ok(link?.addresses.some((x) => x.local === '10.0.1.10' && x.prefixlen === 32));
      assert.deepEqual(
        node.routes
          .filter((r) => r.table === 2)
          .map((r) => `${r.dst} ${r.gateway ?? '-'} ${r.dev}`)
          .sort(),
        ['10.0.1.1 - eni1', 'default 10.0.1.1 eni1'],
      );
      assert.deepEqual(await nodeRulesFor(h, '10.0.1.10'), ['1536 10.0.1.10 - 2']);
      await assert.rejects(h.dataplane.setupEni({ ...ENI, mac: '02:0e:0e:00:00:99' }), /no link has MAC/);
    },
  },
  {
    name: 'teardownEni undoes exactly what setupEni made, twice, keeps another ENI and refuses the primary',
    async run(h) {
      const other: EniLinkSpec = {
        ...ENI,
        mac: '02:0e:0e:00:00:02',
        deviceNumber: 2,
        primaryIp: '10.0.1.11',
        routeTable: 3,
      };
      await h.addNodeLink('eni1', ENI.mac);
      await h.addNodeLink('eni2', other.mac);
      await h.dataplane.setupEni(ENI);
      await h.dataplane.setupEni(other);
      for (let i = 0; i < 2; i++) {
        await h.dataplane.teardownEni(ENI);
        const node = await h.dataplane.observeNode();
        assert.deepEqual(
          node.routes.filter((r) => r.table === 2),
          [],
        );
        assert.equal(node.routes.filter((r) => r.table === 3).length, 2, 'another ENI keeps its table');
        assert.deepEqual(await nodeRulesFor(h, '10.0.1.10'), []);
        assert.deepEqual(await nodeRulesFor(h, '10.0.1.11'), ['1536 10.0.1.11 - 3']);
        const link = node.links.find((l) => l.ifname === 'eni1');
        assert.deepEqual(
          link?.addresses.filter((x) => x.family === 'inet'),
          [],
        );
      }
      await assert.rejects(h.dataplane.teardownEni({ ...ENI, deviceNumber: 0, routeTable: 254 }), /refusing/);
    },
  },
  {
    name: "GC finds exactly what looks like vpcnet's and no record owns, and collects only that",
    async run(h) {
      const [pa, pb] = [await h.pod(), await h.pod()];
      const a = plan('c-a', '10.0.0.5');
      const forgotten = plan('c-b', '10.0.0.6');
      await h.dataplane.create(pa, a);
      await h.dataplane.create(pb, forgotten);
      await h.byHand(NODE, [
        { op: 'ruleAdd', rule: { priority: 512, to: '10.0.0.7/32', table: 254 } },
        { op: 'ruleAdd', rule: { priority: 1536, from: '10.0.1.10/32', table: 2 } },
        { op: 'snatAdd', ip: '10.0.0.8' },
      ]);
      const owned = new Set(a.map(identityOf));
      const orphans = findOrphans(await h.dataplane.observeNode(), {
        vethPrefix: 'vpc',
        owns: (id) => owned.has(id),
        protectedAddresses: new Set(['10.0.1.10']),
      });
      assert.deepEqual(orphans.map((o) => o.identity).sort(), [
        'rule 1536 10.0.0.6/32 - - 2',
        'rule 512 - 10.0.0.6/32 - 254',
        'rule 512 - 10.0.0.7/32 - 254',
        'snat 10.0.0.6',
        'snat 10.0.0.8',
        `veth ${hostVeth(forgotten)}`,
      ]);
      await h.dataplane.collect(orphans);
      assert.deepEqual(await problems(h, pa, a), []);
      const left = findOrphans(await h.dataplane.observeNode(), {
        vethPrefix: 'vpc',
        owns: (id) => owned.has(id),
        protectedAddresses: new Set(['10.0.1.10']),
      });
      assert.deepEqual(left, []);
      assert.deepEqual(await nodeRulesFor(h, '10.0.1.10'), ['1536 10.0.1.10 - 2']);
    },
  },
];
