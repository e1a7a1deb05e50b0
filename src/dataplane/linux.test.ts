// LinuxDataplane against a scripted runner: which processes it starts, and what it undoes when a
// step fails. The real kernel is exercised in test/dataplane.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CommandResult } from './command.ts';
import type { PodNetworkSpec } from './dataplane.ts';
import { DataplaneError } from './errors.ts';
import { LinuxDataplane } from './linux.ts';

interface Call {
  readonly argv: readonly string[];
  readonly stdin: string;
}

/** Answers each call with the next scripted result (success with no output once the script runs out). */
function scripted(results: Partial<CommandResult>[]) {
  const calls: Call[] = [];
  const runner = async (argv: readonly string[], stdin?: string): Promise<CommandResult> => {
    calls.push({ argv, stdin: stdin ?? '' });
    return { code: 0, stdout: '', stderr: '', ...results.shift() };
  };
  return { calls, runner };
}

const spec: PodNetworkSpec = {
  netnsPath: '/var/run/netns/pod-a',
  ifName: 'eth0',
  hostVeth: 'vpc0000000000a1',
  hostMac: '02:00:00:00:00:a1',
  ip: '10.0.0.5',
  mtu: 9001,
  routeTable: 2,
  snat: true,
};
const podLink = '[{"ifname":"eth0","address":"0a:58:0a:00:00:05","flags":["UP"],"mtu":9001}]\n';

test('addPod runs one pod-side batch, one node-side batch and one nft, with the host end created in the agent namespace', async () => {
  const { calls, runner } = scripted([{ stdout: podLink }]);
  const dp = new LinuxDataplane({ runner, agentPid: 4242 });
  const result = await dp.addPod(spec);
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    ['nsenter --net=/var/run/netns/pod-a ip -j -batch -', 'ip -batch -', 'nft -f -'],
  );
  assert.match(
    calls[0]?.stdin ?? '',
    /peer name vpc0000000000a1 mtu 9001 address 02:00:00:00:00:a1 netns \/proc\/4242\/ns\/net\n/,
  );
  assert.equal(calls[2]?.stdin, 'add element ip vpcnet snat_pods { 10.0.0.5 }\n');
  assert.equal(result.podInterface.mac, '0a:58:0a:00:00:05');
  assert.equal(dp.commandsRun, 3);
});

test('with hostNetns, node-side commands enter that namespace and the host end is created there', async () => {
  const { calls, runner } = scripted([{ stdout: podLink }]);
  await new LinuxDataplane({ runner, hostNetns: '/var/run/netns/node1' }).addPod({ ...spec, snat: false });
  assert.equal(calls[1]?.argv.join(' '), 'nsenter --net=/var/run/netns/node1 ip -batch -');
  assert.match(calls[0]?.stdin ?? '', / netns \/var\/run\/netns\/node1\n/);
});

test('a node-side failure at the from-rule undoes the to-rule and the veth, newest first, and names the step', async () => {
  const { calls, runner } = scripted([
    { stdout: podLink },
    { code: 1, stderr: 'RTNETLINK answers: File exists\nCommand failed -:4\n' },
  ]);
  const dp = new LinuxDataplane({ runner });
  await assert.rejects(dp.addPod(spec), (err: unknown) => {
    assert.ok(err instanceof DataplaneError);
    assert.equal(err.step, 'rule add from 10.0.0.5/32 lookup 2 prio 1536');
    assert.equal(err.kernelMessage, 'RTNETLINK answers: File exists');
    assert.equal(err.hostVeth, 'vpc0000000000a1');
    return true;
  });
  assert.equal(calls[2]?.argv.join(' '), 'ip -force -batch -');
  assert.equal(calls[2]?.stdin, 'rule del to 10.0.0.5/32 lookup main prio 512\nlink del vpc0000000000a1\n');
});

test('a pod-side failure at the first line undoes nothing: an existing veth of that name is not ours', async () => {
  const { calls, runner } = scripted([
    { code: 1, stderr: 'RTNETLINK answers: File exists\nCommand failed -:1\n' },
  ]);
  await assert.rejects(new LinuxDataplane({ runner }).addPod(spec), /step "link add eth0 /);
  assert.equal(calls.length, 1);
});

test('a pod-side failure after the veth exists deletes the veth from the node side', async () => {
  const { calls, runner } = scripted([
    { code: 1, stderr: 'RTNETLINK answers: Invalid argument\nCommand failed -:5\n' },
  ]);
  await assert.rejects(new LinuxDataplane({ runner }).addPod(spec), /route add default via 169\.254\.1\.1/);
  assert.equal(calls[1]?.stdin, 'link del vpc0000000000a1\n');
});

test('a rollback that cannot undo something says so in the error', async () => {
  const { runner } = scripted([
    { stdout: podLink },
    { code: 1, stderr: 'RTNETLINK answers: Invalid argument\nCommand failed -:2\n' },
    { code: 1, stderr: 'RTNETLINK answers: Operation not permitted\nCommand failed -:1\n' },
  ]);
  await assert.rejects(
    new LinuxDataplane({ runner }).addPod(spec),
    /rollback incomplete: link del vpc0000000000a1: RTNETLINK answers: Operation not permitted/,
  );
});

test('removeResources runs one tolerant ip batch (rules, routes, then veths) and one nft, skipping addresses', async () => {
  const { calls, runner } = scripted([
    {
      code: 1,
      stderr:
        'RTNETLINK answers: No such file or directory\nCommand failed -:1\nCannot find device "vpc0000000000a1"\nCommand failed -:3\n',
    },
  ]);
  await new LinuxDataplane({ runner }).removeResources([
    { kind: 'address', ip: '10.0.0.5', eniId: 'eni-1' },
    { kind: 'veth', hostName: 'vpc0000000000a1' },
    { kind: 'hostRoute', dst: '10.0.0.5/32', dev: 'vpc0000000000a1' },
    { kind: 'rule', priority: 512, to: '10.0.0.5/32', table: 254 },
    { kind: 'snat', ip: '10.0.0.5' },
  ]);
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    ['ip -force -batch -', 'nft -f -'],
  );
  assert.equal(
    calls[0]?.stdin,
    'rule del to 10.0.0.5/32 lookup 254 prio 512\nroute del 10.0.0.5/32 dev vpc0000000000a1\nlink del vpc0000000000a1\n',
  );
});

test('removeResources refuses a resource whose fields could inject a second command', async () => {
  const { calls, runner } = scripted([]);
  await assert.rejects(
    new LinuxDataplane({ runner }).removeResources([{ kind: 'veth', hostName: 'x\nlink del eth0' }]),
    /invalid link name/,
  );
  assert.equal(calls.length, 0);
});

const hostLinkUp =
  '[{"ifname":"vpc0000000000a1","address":"02:00:00:00:00:a1","flags":["BROADCAST","UP"],"mtu":9001}]';
const snatSetWith = (ips: string[]) =>
  JSON.stringify({
    nftables: [{ metainfo: {} }, { set: { family: 'ip', name: 'snat_pods', table: 'vpcnet', elem: ips } }],
  });

test('repairHostSide reads the node side once and restores only the missing pieces in one ip batch and one nft', async () => {
  const { calls, runner } = scripted([
    // link show (up) · route show (none) · rule show (only the from-rule)
    { stdout: `${hostLinkUp}\n[]\n[{"priority":1536,"src":"10.0.0.5","table":"2"}]\n` },
    { stdout: snatSetWith(['10.0.0.9']) },
  ]);
  const dp = new LinuxDataplane({ runner });
  const fixed = await dp.repairHostSide(spec);
  assert.deepEqual(fixed, [
    'host route to 10.0.0.5 dev vpc0000000000a1 missing',
    'rule to 10.0.0.5 lookup main missing',
    'snat element 10.0.0.5 missing',
  ]);
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    ['ip -j -force -batch -', 'nft -j list set ip vpcnet snat_pods', 'ip -batch -', 'nft -f -'],
  );
  assert.equal(
    calls[2]?.stdin,
    'route replace 10.0.0.5/32 dev vpc0000000000a1 scope link\nrule add to 10.0.0.5/32 lookup main prio 512\n',
  );
  assert.equal(calls[3]?.stdin, 'add element ip vpcnet snat_pods { 10.0.0.5 }\n');
});

test('repairHostSide of a pod whose host veth is gone changes nothing and says so', async () => {
  const { calls, runner } = scripted([
    { code: 1, stderr: 'Device "vpc0000000000a1" does not exist.\nCommand failed -:1\n', stdout: '[]\n[]\n' },
    { stdout: snatSetWith(['10.0.0.5']) },
  ]);
  await assert.rejects(new LinuxDataplane({ runner }).repairHostSide(spec), /host veth missing/);
  assert.equal(calls.length, 2, 'only the reads ran');
});

test('repairPodSide restores address, routes and the permanent neighbour in one batch inside the pod', async () => {
  const { calls, runner } = scripted([
    {
      stdout:
        '[{"ifname":"eth0","address":"0a:58:0a:00:00:05","flags":["UP"],"mtu":9001,"addr_info":[]}]\n[]\n[]\n[]\n',
    },
  ]);
  const fixed = await new LinuxDataplane({ runner }).repairPodSide(spec);
  assert.equal(fixed.length, 4);
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    [
      'nsenter --net=/var/run/netns/pod-a ip -j -force -batch -',
      'nsenter --net=/var/run/netns/pod-a ip -batch -',
    ],
  );
  assert.equal(
    calls[1]?.stdin,
    [
      'addr replace 10.0.0.5/32 dev eth0',
      'route replace 169.254.1.1 dev eth0 scope link',
      'route replace default via 169.254.1.1 dev eth0',
      'neigh replace 169.254.1.1 dev eth0 lladdr 02:00:00:00:00:a1 nud permanent',
      '',
    ].join('\n'),
  );
});

test('observePodSide reports a namespace it cannot enter instead of failing', async () => {
  const { runner } = scripted([
    { code: 1, stderr: 'nsenter: cannot open /var/run/netns/pod-a: No such file or directory\n' },
  ]);
  const seen = await new LinuxDataplane({ runner }).observePodSide(spec);
  assert.deepEqual(seen, {
    reachable: false,
    reason: 'nsenter: cannot open /var/run/netns/pod-a: No such file or directory',
  });
});

test('observeNode reads veths, main routes, rules and the SNAT set with one ip batch and one nft', async () => {
  const { calls, runner } = scripted([
    {
      stdout: `${hostLinkUp}\n[{"dst":"10.0.0.5","dev":"vpc0000000000a1","scope":"link","flags":[]}]\n[{"priority":512,"src":"all","dst":"10.0.0.6","iif":"lo","table":"main"}]\n`,
    },
    { code: 1, stderr: 'Error: No such file or directory\nlist set ip vpcnet snat_pods\n' },
  ]);
  const node = await new LinuxDataplane({ runner }).observeNode();
  assert.equal(calls[0]?.stdin, 'link show type veth\nroute show table main\nrule show\n');
  assert.deepEqual(
    node.veths.map((l) => l.ifname),
    ['vpc0000000000a1'],
  );
  assert.deepEqual(node.routes, [{ dst: '10.0.0.5', dev: 'vpc0000000000a1' }]);
  assert.deepEqual(node.rules, [{ priority: 512, src: 'all', dst: '10.0.0.6', table: 254, other: ['iif'] }]);
  assert.equal(node.snatElements, undefined, 'no set yet: no elements');
});

const eniSpec = {
  mac: '02:0E:0E:00:00:01',
  deviceNumber: 1,
  primaryIp: '10.0.1.10',
  subnetCidr: '10.0.1.0/24',
  gateway: '10.0.1.1',
  routeTable: 2,
  mtu: 9001,
};
const eniLinkWithAddress =
  '[{"ifname":"lo","address":"00:00:00:00:00:00","flags":["UP"],"mtu":65536,"addr_info":[]},' +
  '{"ifname":"ens6","address":"02:0e:0e:00:00:01","flags":["UP"],"mtu":9001,' +
  '"addr_info":[{"family":"inet","local":"10.0.1.10","prefixlen":32}]}]\n';

test('teardownEni reads the addresses, then flushes the ENI table, deletes its rule and its /32 in one tolerant batch', async () => {
  const { calls, runner } = scripted([{ stdout: eniLinkWithAddress }]);
  const dp = new LinuxDataplane({ runner, hostNetns: '/var/run/netns/node1' });
  await dp.teardownEni(eniSpec);
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    [
      'nsenter --net=/var/run/netns/node1 ip -j -batch -',
      'nsenter --net=/var/run/netns/node1 ip -force -batch -',
    ],
  );
  assert.equal(calls[0]?.stdin, 'addr show\n');
  assert.equal(
    calls[1]?.stdin,
    'route flush table 2\nrule del from 10.0.1.10/32 lookup 2 prio 1536\naddr del 10.0.1.10/32 dev ens6\n',
  );
});

test('teardownEni again, or after the link is gone, skips the address and counts a missing rule as removed', async () => {
  const { calls, runner } = scripted([
    { stdout: '[{"ifname":"lo","address":"00:00:00:00:00:00","flags":["UP"],"mtu":65536,"addr_info":[]}]\n' },
    { code: 1, stderr: 'RTNETLINK answers: No such file or directory\nCommand failed -:2\n' },
  ]);
  await new LinuxDataplane({ runner }).teardownEni(eniSpec);
  assert.equal(calls[1]?.stdin, 'route flush table 2\nrule del from 10.0.1.10/32 lookup 2 prio 1536\n');
});

test('teardownEni reports a real failure with its step, and refuses the main table without running anything', async () => {
  const { runner } = scripted([
    { stdout: eniLinkWithAddress },
    { code: 1, stderr: 'RTNETLINK answers: Operation not permitted\nCommand failed -:1\n' },
  ]);
  await assert.rejects(new LinuxDataplane({ runner }).teardownEni(eniSpec), (err: unknown) => {
    assert.ok(err instanceof DataplaneError);
    assert.equal(err.step, 'route flush table 2');
    assert.equal(err.kernelMessage, 'RTNETLINK answers: Operation not permitted');
    return true;
  });
  const idle = scripted([]);
  await assert.rejects(
    new LinuxDataplane({ runner: idle.runner }).teardownEni({ ...eniSpec, deviceNumber: 0, routeTable: 254 }),
    /refusing to tear down ENI device 0/,
  );
  assert.equal(idle.calls.length, 0);
});
