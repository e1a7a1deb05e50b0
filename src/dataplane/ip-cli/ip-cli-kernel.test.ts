// The Linux kernel driver (through the dataplane) against a scripted runner: which processes it
// starts, what it sends them, and what it undoes when a step fails. The real kernel is exercised in
// test/kernels/dataplane.test.ts and test/kernels/dataplane-scenarios.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planRegularPod } from '../../plan/pod-plan.ts';
import { Dataplane } from '../dataplane.ts';
import { DataplaneError } from '../errors.ts';
import type { CommandResult } from './command.ts';
import { IpCliKernel, type IpCliKernelDeps } from './ip-cli-kernel.ts';

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

function dataplane(deps: IpCliKernelDeps): { dp: Dataplane; kernel: IpCliKernel } {
  const kernel = new IpCliKernel(deps);
  return { dp: new Dataplane(kernel), kernel };
}

const KEY = { network: 'vpcnet', containerId: 'c-a', ifName: 'eth0' };
const plan = (snat = true) =>
  planRegularPod({
    key: KEY,
    vethPrefix: 'vpc',
    ip: '10.0.0.5',
    eniId: 'eni-1',
    routeTable: 2,
    mtu: 9001,
    snat,
  });
const VETH = plan().find((r) => r.kind === 'veth');
const HOST = VETH?.kind === 'veth' ? VETH.hostName : '';
const POD = '/var/run/netns/pod-a';

test('a create runs one pod-side batch, one node-side batch and one nft, with the host end created in the agent namespace', async () => {
  const { calls, runner } = scripted([]);
  const { dp, kernel } = dataplane({ runner, agentPid: 4242 });
  await dp.create(POD, plan());
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    [`nsenter --net=${POD} ip -batch -`, 'ip -batch -', 'nft -f -'],
  );
  assert.match(
    calls[0]?.stdin ?? '',
    new RegExp(`peer name ${HOST} mtu 9001 address [0-9a-f:]+ netns /proc/4242/ns/net\n`),
  );
  assert.equal(
    calls[1]?.stdin,
    [
      `link set ${HOST} up`,
      `route add 10.0.0.5/32 dev ${HOST} scope link table main`,
      'rule add to 10.0.0.5/32 lookup main prio 512',
      'rule add from 10.0.0.5/32 lookup 2 prio 1536',
      '',
    ].join('\n'),
  );
  assert.equal(calls[2]?.stdin, 'add element ip vpcnet snat_pods { 10.0.0.5 }\n');
  assert.equal(kernel.commandsRun, 3);
});

test('with hostNetns, node-side commands enter that namespace and the host end is created there', async () => {
  const { calls, runner } = scripted([]);
  await dataplane({ runner, hostNetns: '/var/run/netns/node1' }).dp.create(POD, plan(false));
  assert.equal(calls[1]?.argv.join(' '), 'nsenter --net=/var/run/netns/node1 ip -batch -');
  assert.match(calls[0]?.stdin ?? '', / netns \/var\/run\/netns\/node1\n/);
  assert.equal(calls.length, 2, 'no nft without SNAT');
});

test('a node-side failure at the from-rule undoes what this create made, rules before routes before links, and names the step', async () => {
  const { calls, runner } = scripted([
    {},
    { code: 1, stderr: 'RTNETLINK answers: File exists\nCommand failed -:4\n' },
  ]);
  await assert.rejects(dataplane({ runner }).dp.create(POD, plan()), (err: unknown) => {
    assert.ok(err instanceof DataplaneError);
    assert.equal(err.step, 'rule add from 10.0.0.5/32 lookup 2 prio 1536');
    assert.equal(err.kernelMessage, 'RTNETLINK answers: File exists');
    assert.equal(err.hostVeth, HOST);
    return true;
  });
  assert.equal(calls[2]?.argv.join(' '), 'ip -force -batch -');
  assert.equal(
    calls[2]?.stdin,
    // The host route goes with the veth: no line of its own.
    `rule del to 10.0.0.5/32 lookup main prio 512\nlink del ${HOST}\n`,
  );
});

test('a pod-side failure at the first line undoes nothing: an existing veth of that name is not ours', async () => {
  const { calls, runner } = scripted([
    { code: 1, stderr: 'RTNETLINK answers: File exists\nCommand failed -:1\n' },
  ]);
  await assert.rejects(dataplane({ runner }).dp.create(POD, plan()), /step "link add eth0 /);
  assert.equal(calls.length, 1);
});

test('a pod-side failure after the veth exists deletes the veth from the node side', async () => {
  const { calls, runner } = scripted([
    { code: 1, stderr: 'RTNETLINK answers: Invalid argument\nCommand failed -:5\n' },
  ]);
  await assert.rejects(dataplane({ runner }).dp.create(POD, plan()), /route add default via 169\.254\.1\.1/);
  assert.equal(calls[1]?.argv.join(' '), 'ip -force -batch -');
  assert.equal(calls[1]?.stdin, `link del ${HOST}\n`);
});

test('a namespace that cannot be entered fails the create at nsenter and undoes nothing', async () => {
  const { calls, runner } = scripted([
    { code: 1, stderr: `nsenter: cannot open ${POD}: No such file or directory\n` },
  ]);
  await assert.rejects(
    dataplane({ runner }).dp.create(POD, plan()),
    /step "nsenter --net=\/var\/run\/netns\/pod-a" failed: nsenter: cannot open/,
  );
  assert.equal(calls.length, 1);
});

test('a rollback that cannot undo something says so in the error', async () => {
  const { runner } = scripted([
    {},
    { code: 1, stderr: 'RTNETLINK answers: Invalid argument\nCommand failed -:2\n' },
    { code: 1, stderr: 'RTNETLINK answers: Operation not permitted\nCommand failed -:1\n' },
  ]);
  await assert.rejects(
    dataplane({ runner }).dp.create(POD, plan()),
    new RegExp(`rollback incomplete: link del ${HOST}: RTNETLINK answers: Operation not permitted`),
  );
});

test('remove runs one tolerant ip batch (rules, then links: their routes go with them) and one nft, never entering the pod', async () => {
  const { calls, runner } = scripted([
    {
      code: 1,
      stderr: `RTNETLINK answers: No such file or directory\nCommand failed -:1\nCannot find device "${HOST}"\nCommand failed -:3\n`,
    },
  ]);
  await dataplane({ runner }).dp.remove(plan());
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    ['ip -force -batch -', 'nft -f -'],
  );
  assert.equal(
    calls[0]?.stdin,
    [
      'rule del to 10.0.0.5/32 lookup main prio 512',
      'rule del from 10.0.0.5/32 lookup 2 prio 1536',
      `link del ${HOST}`,
      '',
    ].join('\n'),
  );
  assert.equal(
    calls[1]?.stdin,
    'add element ip vpcnet snat_pods { 10.0.0.5 }\ndelete element ip vpcnet snat_pods { 10.0.0.5 }\n',
  );
});

test('remove reports a real failure instead of calling it gone', async () => {
  const { runner } = scripted([
    { code: 1, stderr: 'RTNETLINK answers: Operation not permitted\nCommand failed -:1\n' },
  ]);
  await assert.rejects(dataplane({ runner }).dp.remove(plan(false)), (err: unknown) => {
    assert.ok(err instanceof DataplaneError);
    assert.equal(err.step, 'rule del to 10.0.0.5/32 lookup main prio 512');
    return true;
  });
});

test('a resource whose fields could inject a second command is refused before anything runs', async () => {
  const { calls, runner } = scripted([]);
  const { dp } = dataplane({ runner });
  await assert.rejects(
    dp.remove([
      { kind: 'veth', hostName: 'x\nlink del eth0', hostMac: '02:00:00:00:00:01', podIfName: 'eth0', mtu: 1 },
    ]),
    /invalid link name/,
  );
  await assert.rejects(
    dp.remove([{ kind: 'snat', ip: '10.0.0.5 } ; flush ruleset ; {' }]),
    /not an IPv4 address/,
  );
  assert.equal(calls.length, 0);
});

const snatSetWith = (ips: string[]) =>
  JSON.stringify({
    nftables: [{ metainfo: {} }, { set: { family: 'ip', name: 'snat_pods', table: 'vpcnet', elem: ips } }],
  });

test('readNode reads links with addresses, all tables but local, rules and the SNAT set with one ip batch and one nft', async () => {
  const { calls, runner } = scripted([
    {
      stdout:
        `[{"ifname":"${HOST}","address":"02:00:00:00:00:A1","flags":["UP"],"mtu":9001,"addr_info":[],"linkinfo":{"info_kind":"veth"}}]\n` +
        `[{"dst":"10.0.0.5","dev":"${HOST}","scope":"link","flags":[]},{"dst":"default","gateway":"10.0.1.1","dev":"ens6","table":"2"},` +
        `{"type":"local","dst":"127.0.0.1","dev":"lo","table":"local"},{"dst":"fe80::/64","dev":"ens6"}]\n` +
        '[{"priority":512,"src":"all","dst":"10.0.0.6","iif":"lo","table":"main","protocol":"unspec"},{"priority":9,"src":"all","fwmark":"0x80","table":"main"}]\n',
    },
    { code: 1, stderr: 'Error: No such file or directory\nlist set ip vpcnet snat_pods\n' },
  ]);
  const node = await new IpCliKernel({ runner }).readNode();
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    ['ip -d -j -batch -', 'nft -j list set ip vpcnet snat_pods'],
  );
  assert.equal(calls[0]?.stdin, 'addr show\nroute show table all\nrule show\n');
  assert.deepEqual(node.links, [
    { ifname: HOST, address: '02:00:00:00:00:a1', flags: ['UP'], mtu: 9001, addresses: [], kind: 'veth' },
  ]);
  assert.deepEqual(node.routes, [
    { dst: '10.0.0.5', table: 254, dev: HOST, scope: 'link' },
    { dst: 'default', table: 2, gateway: '10.0.1.1', dev: 'ens6' },
  ]);
  assert.deepEqual(node.rules, [
    { priority: 512, src: 'all', dst: '10.0.0.6', iif: 'lo', table: 254 },
    { priority: 9, src: 'all', table: 254, other: ['fwmark'] },
  ]);
  assert.equal(node.snatElements, undefined, 'no set yet: no elements');
  const withSet = scripted([{ stdout: '[]\n[]\n[]\n' }, { stdout: snatSetWith(['10.0.0.5']) }]);
  assert.deepEqual((await new IpCliKernel({ runner: withSet.runner }).readNode()).snatElements, ['10.0.0.5']);
});

test('readPod reports a namespace it cannot enter instead of failing', async () => {
  const { runner } = scripted([
    { code: 1, stderr: `nsenter: cannot open ${POD}: No such file or directory\n` },
  ]);
  assert.deepEqual(await new IpCliKernel({ runner }).readPod(POD), {
    reachable: false,
    reason: `nsenter: cannot open ${POD}: No such file or directory`,
  });
});

test('repair restores only the findings, in one batch inside the pod and one on the node', async () => {
  const { calls, runner } = scripted([]);
  const { dp } = dataplane({ runner });
  const resources = plan(false);
  const route = resources.find((r) => r.kind === 'route' && r.side === 'pod' && r.dst === 'default');
  const rule = resources.find((r) => r.kind === 'rule' && r.priority === 512);
  assert.ok(route && rule);
  await dp.repair(POD, [
    {
      resource: route,
      problem: 'default route missing',
      repair: [
        {
          side: 'pod',
          op: { op: 'routeAdd', dst: 'default', dev: 'eth0', via: '169.254.1.1', table: 254, replace: true },
        },
      ],
    },
    {
      resource: rule,
      problem: 'rule missing',
      repair: [
        { side: 'node', op: { op: 'ruleAdd', rule: { priority: 512, to: '10.0.0.5/32', table: 254 } } },
      ],
    },
  ]);
  assert.deepEqual(
    calls.map((c) => `${c.argv.join(' ')} <<< ${c.stdin.trim()}`),
    [
      `nsenter --net=${POD} ip -batch - <<< route replace default via 169.254.1.1 dev eth0 table main`,
      'ip -batch - <<< rule add to 10.0.0.5/32 lookup main prio 512',
    ],
  );
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
const eniLink =
  '[{"ifname":"lo","address":"00:00:00:00:00:00","flags":["UP"],"mtu":65536,"addr_info":[]},' +
  '{"ifname":"ens6","address":"02:0e:0e:00:00:01","flags":["UP"],"mtu":9001,' +
  '"addr_info":[{"family":"inet","local":"10.0.1.10","prefixlen":32}]}]\n[]\n[]\n';

test('teardownEni reads the node, then removes its rule, its /32 and its table routes in one tolerant batch', async () => {
  const { calls, runner } = scripted([{ stdout: eniLink }]);
  await dataplane({ runner, hostNetns: '/var/run/netns/node1' }).dp.teardownEni(eniSpec);
  assert.deepEqual(
    calls.map((c) => c.argv.join(' ')),
    [
      'nsenter --net=/var/run/netns/node1 ip -d -j -batch -',
      'nsenter --net=/var/run/netns/node1 nft -j list set ip vpcnet snat_pods',
      'nsenter --net=/var/run/netns/node1 ip -force -batch -',
    ],
  );
  assert.equal(
    calls[2]?.stdin,
    [
      'rule del from 10.0.1.10/32 lookup 2 prio 1536',
      'addr del 10.0.1.10/32 dev ens6',
      'route del 10.0.1.1/32 dev ens6 table 2',
      'route del default dev ens6 table 2',
      '',
    ].join('\n'),
  );
});

test('teardownEni after the link is gone removes only the rule, and counts a missing rule as removed', async () => {
  const { calls, runner } = scripted([
    { stdout: '[]\n[]\n[]\n' },
    {},
    { code: 1, stderr: 'RTNETLINK answers: No such file or directory\nCommand failed -:1\n' },
  ]);
  await dataplane({ runner }).dp.teardownEni(eniSpec);
  assert.equal(calls[2]?.stdin, 'rule del from 10.0.1.10/32 lookup 2 prio 1536\n');
});

test('teardownEni reports a real failure with its step, and refuses the main table without running anything', async () => {
  const { runner } = scripted([
    { stdout: eniLink },
    {},
    { code: 1, stderr: 'RTNETLINK answers: Operation not permitted\nCommand failed -:1\n' },
  ]);
  await assert.rejects(dataplane({ runner }).dp.teardownEni(eniSpec), (err: unknown) => {
    assert.ok(err instanceof DataplaneError);
    assert.equal(err.step, 'rule del from 10.0.1.10/32 lookup 2 prio 1536');
    assert.equal(err.kernelMessage, 'RTNETLINK answers: Operation not permitted');
    return true;
  });
  const idle = scripted([]);
  await assert.rejects(
    dataplane({ runner: idle.runner }).dp.teardownEni({ ...eniSpec, deviceNumber: 0, routeTable: 254 }),
    /refusing to tear down ENI device 0/,
  );
  assert.equal(idle.calls.length, 0);
});
