// IPv6, cloud side, in a dual-stack lab (`lab up --ipv6`) whose agent runs with ENABLE_IPv6=true
// and ENABLE_PREFIX_DELEGATION=true: the node holds exactly one /80 on its primary ENI (EC2 and
// the agent's state agree), a restarted agent adopts it instead of taking a second, and the
// fabric routes the /80 to the node: an address of it, placed by the test in a namespace behind
// the node, and the dual-stack VPC host reach each other over IPv6. Pods themselves are the
// node side's (their IPv6 pod plan); this suite needs none.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { formatIpv6, parseIpv6Cidr } from '../../src/infra/ipv6-cidr.ts';
import {
  agentState,
  emulatorState,
  ipv6BehindNode,
  type LabDesc,
  type LabNodeDesc,
  labDown,
  labUp,
  reaches,
  restartAgent,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

interface Ipv6PoolState {
  readonly prefix: string | null;
  readonly eniId: string | null;
  readonly problem: string | null;
}

describe('IPv6 addresses, cloud side, in a dual-stack lab', () => {
  const name = uniqueLabName('v6c');
  let lab: LabDesc;
  let node: LabNodeDesc;

  const primaryEni = async () => {
    const eni = (await emulatorState(name)).enis.find((e) => e.attachment?.deviceIndex === 0);
    assert.ok(eni, 'the node has a primary ENI');
    return eni;
  };
  const poolState = async () => ((await agentState(node)).pool as { ipv6?: Ipv6PoolState }).ipv6;

  before(async () => {
    await labDown(name);
    lab = await labUp(name, [
      '--ipv6',
      '--agent-env',
      'ENABLE_IPv6=true',
      '--agent-env',
      'ENABLE_PREFIX_DELEGATION=true',
    ]);
    node = lab.nodes[0]!;
  });
  after(async () => {
    await labDown(name);
  });

  test('the lab description gives the VPC host its IPv6 address', () => {
    assert.equal(lab.vpcHosts[0]?.ipv6, '2001:db8:5e00:ff::10');
  });

  test('the agent holds exactly one /80 on the primary ENI, and EC2 and its state agree', async () => {
    const eni = await primaryEni();
    assert.equal(eni.ipv6Prefixes.length, 1, JSON.stringify(eni));
    assert.equal(eni.ipv6Addresses.length, 1, 'the node has its primary IPv6');
    const pool = await poolState();
    assert.deepEqual(pool, { ...pool, prefix: eni.ipv6Prefixes[0], eniId: eni.eniId, problem: null });
  });

  test('a restarted agent adopts the /80 instead of taking a second', async () => {
    const [prefix] = (await primaryEni()).ipv6Prefixes;
    await restartAgent(name, node);
    assert.deepEqual((await primaryEni()).ipv6Prefixes, [prefix]);
    assert.equal((await poolState())?.prefix, prefix);
  });

  test('an address of the /80 behind the node and the VPC host reach each other over IPv6', async () => {
    const [prefix] = (await primaryEni()).ipv6Prefixes;
    const address = formatIpv6(parseIpv6Cidr(prefix!).base + 0xabcn);
    const host = lab.vpcHosts[0]!;
    const behind = `v6c-${randomBytes(3).toString('hex')}`;
    const remove = await ipv6BehindNode(node, behind, address);
    try {
      // The first packets may wait for neighbour discovery on the node's veth: retried, not timed.
      const there = (from: string, to: string) =>
        waitFor(`${from} to reach ${to}`, async () => ((await reaches(from, to)) ? true : undefined));
      assert.equal(await there(host.netns, address), true);
      assert.equal(await there(behind, host.ipv6!), true);
    } finally {
      await remove();
    }
  });
});
