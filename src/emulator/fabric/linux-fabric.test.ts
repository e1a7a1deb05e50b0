import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CommandFailed } from '../../infra/process.ts';
import type { FabricEni } from '../api.ts';
import { vpcLinkName } from './link-names.ts';
import { LinuxFabric } from './linux-fabric.ts';

const ENI: FabricEni = {
  eniId: 'eni-0123456789abcdef0',
  mac: '02:aa:bb:cc:dd:ee',
  primaryIp: '10.0.0.4',
  subnetCidr: '10.0.0.0/20',
  gateway: '10.0.0.1',
};

interface Call {
  netns: string | undefined;
  lines: readonly string[];
  force: boolean;
}

function recordingFabric(fail?: (c: Call) => string | undefined): { fabric: LinuxFabric; calls: Call[] } {
  const calls: Call[] = [];
  const fabric = new LinuxFabric({
    vpcNetns: 'L-vpc',
    ip: async (netns, lines, force = false) => {
      const call = { netns, lines, force };
      calls.push(call);
      const stderr = fail?.(call);
      if (stderr !== undefined) {
        throw new CommandFailed(['ip', '-n', `${netns}`, '-batch', '-'], { code: 1, stdout: '', stderr });
      }
    },
    sysctl: async (netns, settings) => {
      calls.push({
        netns,
        lines: Object.entries(settings).map(([k, v]) => `sysctl ${k}=${v}`),
        force: false,
      });
    },
  });
  return { fabric, calls };
}

describe('LinuxFabric commands', () => {
  test('the VPC-side link name fits IFNAMSIZ and comes from the ENI id', () => {
    assert.equal(vpcLinkName('eni-0123456789abcdef0'), 'v56789abcdef0');
    assert.ok(vpcLinkName('eni-0123456789abcdef0').length <= 15);
  });

  test('attaching device 0 makes the veth, routes the primary IP to the ENI MAC and configures eth0 like DHCP', async () => {
    const { fabric, calls } = recordingFabric();
    await fabric.eniAttached('L-node1', 0, ENI);
    const v = vpcLinkName(ENI.eniId);
    const all = calls.flatMap((c) => c.lines.map((l) => `${c.netns} ${l}`));
    assert.deepEqual(all, [
      `L-vpc link add ${v} type veth peer name eth0 netns L-node1 address ${ENI.mac}`,
      `L-vpc addr replace 10.0.0.1/32 dev ${v}`,
      `L-vpc sysctl net.ipv4.conf.${v}.proxy_arp=1`,
      `L-vpc sysctl net.ipv4.neigh.${v}.proxy_delay=0`,
      `L-vpc link set ${v} up`,
      `L-vpc route replace 10.0.0.4/32 dev ${v}`,
      `L-vpc neigh replace 10.0.0.4 lladdr ${ENI.mac} dev ${v} nud permanent`,
      'L-node1 link set eth0 up',
      'L-node1 addr add 10.0.0.4/20 dev eth0',
      'L-node1 route replace default via 10.0.0.1 dev eth0',
    ]);
  });

  test('attaching a secondary device only brings eth<N> up in the node namespace', async () => {
    const { fabric, calls } = recordingFabric();
    await fabric.eniAttached('L-node1', 2, ENI);
    assert.deepEqual(calls.at(-1), { netns: 'L-node1', lines: ['link set eth2 up'], force: false });
  });

  test('a failed attach removes the half-made link and reports the kernel message', async () => {
    const { fabric, calls } = recordingFabric((c) =>
      c.netns === 'L-node1' ? 'RTNETLINK answers: File exists' : undefined,
    );
    await assert.rejects(fabric.eniAttached('L-node1', 0, ENI), /File exists/);
    assert.deepEqual(calls.at(-1)?.lines, [`link del ${vpcLinkName(ENI.eniId)}`]);
  });

  test('assigning addresses routes each /32 with a permanent neighbour and a prefix via the primary IP', async () => {
    const { fabric, calls } = recordingFabric();
    await fabric.addressesAssigned(ENI, ['10.0.0.9', '10.0.1.16/28']);
    const v = vpcLinkName(ENI.eniId);
    assert.deepEqual(calls[0]?.lines, [
      `route replace 10.0.0.9/32 dev ${v}`,
      `neigh replace 10.0.0.9 lladdr ${ENI.mac} dev ${v} nud permanent`,
      `route replace 10.0.1.16/28 via 10.0.0.4 dev ${v} onlink`,
    ]);
  });

  test('unassigning an address that is already gone succeeds; another failure does not', async () => {
    const gone = recordingFabric(() => 'RTNETLINK answers: No such process\nCommand failed -:1');
    await gone.fabric.addressesUnassigned(ENI, ['10.0.0.9']);
    assert.equal(gone.calls[0]?.force, true);
    const broken = recordingFabric(() => 'RTNETLINK answers: Operation not permitted');
    await assert.rejects(broken.fabric.addressesUnassigned(ENI, ['10.0.0.9']), /Operation not permitted/);
  });

  test('detaching deletes the VPC-side link and tolerates its absence', async () => {
    const { fabric, calls } = recordingFabric(() => 'Cannot find device "vx"');
    await fabric.eniDetached('L-node1', 1, ENI);
    assert.deepEqual(calls[0]?.lines, [`link del ${vpcLinkName(ENI.eniId)}`]);
  });

  test('a dual-stack device 0 gets its primary IPv6 and a default route via <subnet>::1; its /80 goes via that IPv6', async () => {
    const { fabric, calls } = recordingFabric();
    const dual: FabricEni = {
      ...ENI,
      subnetIpv6Cidr: '2001:db8:5e00::/64',
      primaryIpv6: '2001:db8:5e00::10',
    };
    await fabric.eniAttached('L-node1', 0, dual);
    const v = vpcLinkName(ENI.eniId);
    const all = calls.flatMap((c) => c.lines.map((l) => `${c.netns} ${l}`));
    for (const line of [
      `L-vpc addr replace 2001:db8:5e00::1/128 dev ${v} nodad`,
      `L-vpc route replace 2001:db8:5e00::10/128 dev ${v}`,
      `L-vpc neigh replace 2001:db8:5e00::10 lladdr ${ENI.mac} dev ${v} nud permanent`,
      'L-node1 addr add 2001:db8:5e00::10/128 dev eth0 nodad',
      'L-node1 route replace ::/0 via 2001:db8:5e00::1 dev eth0',
    ]) {
      assert.ok(all.includes(line), line);
    }
    calls.length = 0;
    await fabric.ipv6RoutesAdded(dual, ['2001:db8:5e00:0:1::/80']);
    assert.deepEqual(calls[0]?.lines, [
      `route replace 2001:db8:5e00:0:1::/80 via 2001:db8:5e00::10 dev ${v} onlink`,
    ]);
    await fabric.ipv6RoutesRemoved(dual, ['2001:db8:5e00:0:1::/80']);
    assert.deepEqual(calls[1]?.lines, [`route del 2001:db8:5e00:0:1::/80 dev ${v}`]);
  });
});
