// The Linux fabric against real network namespaces (ENIs; branch ENIs in 'macvlan' mode): the emulator runs in this process, its VPC
// side is a lab VPC namespace (LinuxFabric's vpcNetns), and EC2 calls go through the AWS SDK.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  AssignPrivateIpAddressesCommand,
  AttachNetworkInterfaceCommand,
  CreateNetworkInterfaceCommand,
  DetachNetworkInterfaceCommand,
  EC2Client,
  UnassignPrivateIpAddressesCommand,
} from '@aws-sdk/client-ec2';
import type { LaunchedInstance, RunningEmulator } from '../../src/emulator/api.ts';
import { vpcLinkName } from '../../src/emulator/fabric/link-names.ts';
import { LinuxFabric } from '../../src/emulator/fabric/linux-fabric.ts';
import { startEmulator } from '../../src/emulator/server.ts';
import { runCommand } from '../../src/lab/command.ts';
import { labLayout, NODE_SUBNET } from '../../src/lab/layout.ts';
import { createLabNetwork, listNetns } from '../../src/lab/netns.ts';
import { labDown } from '../../src/lab/verbs/down.ts';
import { branchFabricSuite } from './branch-fabric-suite.ts';

const name = `vpclt${randomBytes(3).toString('hex')}`;
const layout = labLayout(name, 1);
const node = layout.nodes[0]!;
const host = layout.hosts[0]!;

function inNs(netns: string, ...args: string[]): Promise<string> {
  return runCommand('ip', ['netns', 'exec', netns, ...args]);
}
function ip(netns: string, ...args: string[]): Promise<string> {
  return runCommand('ip', ['-n', netns, ...args]);
}
async function pings(netns: string, target: string): Promise<boolean> {
  return inNs(netns, 'ping', '-c', '1', '-W', '2', target).then(
    () => true,
    () => false,
  );
}

describe('LinuxFabric in real namespaces', () => {
  let emulator: RunningEmulator;
  let ec2: EC2Client;
  let instance: LaunchedInstance;

  before(async () => {
    await createLabNetwork(layout);
    emulator = await startEmulator({
      vpc: layout.vpc,
      listen: [{ host: '127.0.0.1', port: 0 }],
      fabric: new LinuxFabric({ vpcNetns: layout.vpcNetns, trunkMode: 'macvlan' }),
    });
    ec2 = new EC2Client({
      endpoint: emulator.urls[0]!,
      region: 'us-west-2',
      credentials: { accessKeyId: 'lab', secretAccessKey: 'lab' },
      maxAttempts: 1,
    });
    instance = await emulator.launchInstance({
      instanceType: 't3.medium',
      subnetId: NODE_SUBNET.subnetId,
      netns: node.netns,
      nodeName: node.name,
    });
  });

  after(async () => {
    ec2?.destroy();
    await emulator?.close();
    await labDown(name);
    const left = (await listNetns()).filter((n) => n.startsWith(`${name}-`));
    assert.deepEqual(left, []);
  });

  test('launching an instance gives the node eth0 with the ENI MAC, its address and a default route', async () => {
    const link = JSON.parse(await ip(node.netns, '-j', 'link', 'show', 'dev', 'eth0')) as {
      address: string;
    }[];
    assert.equal(link[0]?.address, instance.primaryEni.mac);
    const addrs = JSON.parse(await ip(node.netns, '-j', '-4', 'addr', 'show', 'dev', 'eth0')) as {
      addr_info: { local: string; prefixlen: number }[];
    }[];
    assert.deepEqual(
      addrs[0]?.addr_info.map((a) => `${a.local}/${a.prefixlen}`),
      [`${instance.primaryEni.primaryIp}/20`],
    );
    assert.match(await ip(node.netns, 'route', 'show', 'default'), /default via 10\.0\.0\.1 dev eth0/);
  });

  test('the node reaches the subnet gateway and the VPC test host', async () => {
    assert.ok(await pings(node.netns, NODE_SUBNET.gateway), 'node pings 10.0.0.1');
    assert.ok(await pings(node.netns, host.ip), `node pings VPC host ${host.ip}`);
    assert.ok(await pings(host.netns, instance.primaryEni.primaryIp), 'VPC host pings the node');
  });

  test('an assigned secondary IP is routed to the ENI with a permanent neighbour, and unrouted on unassign', async () => {
    const eniId = instance.primaryEni.eniId;
    const vpcSide = vpcLinkName(eniId);
    const secondary = '10.0.0.50';
    await ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [secondary] }),
    );
    assert.match(await ip(layout.vpcNetns, 'route', 'show', `${secondary}/32`), new RegExp(`dev ${vpcSide}`));
    const neigh = await ip(layout.vpcNetns, 'neigh', 'show', secondary, 'dev', vpcSide);
    assert.match(neigh, new RegExp(`lladdr ${instance.primaryEni.mac} PERMANENT`));

    await ec2.send(
      new UnassignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [secondary] }),
    );
    assert.equal((await ip(layout.vpcNetns, 'route', 'show', `${secondary}/32`)).trim(), '');
    assert.equal((await ip(layout.vpcNetns, 'neigh', 'show', secondary, 'dev', vpcSide)).trim(), '');
  });

  test('a secondary IP placed in a namespace behind the node is reachable from the VPC host', async () => {
    const eniId = instance.primaryEni.eniId;
    const podIp = '10.0.0.60';
    const pod = `${name}-pod1`;
    await ec2.send(
      new AssignPrivateIpAddressesCommand({ NetworkInterfaceId: eniId, PrivateIpAddresses: [podIp] }),
    );
    // What the agent's dataplane does for a pod, in its simplest form.
    await runCommand('ip', ['netns', 'add', pod]);
    await ip(node.netns, 'link', 'add', 'pod1', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod);
    await ip(node.netns, 'addr', 'add', '169.254.1.1/32', 'dev', 'pod1');
    await ip(node.netns, 'link', 'set', 'pod1', 'up');
    await ip(node.netns, 'route', 'add', `${podIp}/32`, 'dev', 'pod1');
    await ip(pod, 'link', 'set', 'lo', 'up');
    await ip(pod, 'addr', 'add', `${podIp}/32`, 'dev', 'eth0');
    await ip(pod, 'link', 'set', 'eth0', 'up');
    await ip(pod, 'route', 'add', '169.254.1.1', 'dev', 'eth0');
    await ip(pod, 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0');
    assert.ok(await pings(host.netns, podIp), 'VPC host pings the pod address');
    assert.ok(await pings(pod, host.ip), 'the pod pings the VPC host');
  });

  test('attaching a second ENI makes eth1 with its MAC; detaching removes it', async () => {
    const created = await ec2.send(new CreateNetworkInterfaceCommand({ SubnetId: NODE_SUBNET.subnetId }));
    const eni = created.NetworkInterface;
    assert.ok(eni?.NetworkInterfaceId !== undefined && eni.MacAddress !== undefined);
    const attached = await ec2.send(
      new AttachNetworkInterfaceCommand({
        NetworkInterfaceId: eni.NetworkInterfaceId,
        InstanceId: instance.instanceId,
        DeviceIndex: 1,
      }),
    );
    const link = JSON.parse(await ip(node.netns, '-j', 'link', 'show', 'dev', 'eth1')) as {
      address: string;
      flags: string[];
    }[];
    assert.equal(link[0]?.address, eni.MacAddress);
    assert.ok(link[0]?.flags.includes('UP'));
    const vpcSide = vpcLinkName(eni.NetworkInterfaceId);
    assert.match(
      await ip(layout.vpcNetns, 'route', 'show', `${eni.PrivateIpAddress}/32`),
      new RegExp(`dev ${vpcSide}`),
    );

    await ec2.send(new DetachNetworkInterfaceCommand({ AttachmentId: attached.AttachmentId! }));
    await assert.rejects(ip(node.netns, 'link', 'show', 'dev', 'eth1'), /does not exist/);
    await assert.rejects(ip(layout.vpcNetns, 'link', 'show', 'dev', vpcSide), /does not exist/);
  });
});

// This machine's kernel has no 802.1q: branch ENIs ride on the trunk by MAC (fabric-vlan.test.ts
// runs the same suite with VLAN tags under User-Mode Linux).
branchFabricSuite('macvlan');
