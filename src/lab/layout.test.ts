import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkLabName, labDescription, labLayout } from './layout.ts';

test('every namespace of a lab starts with its name and a dash', () => {
  const layout = labLayout('demo', 3);
  const names = [layout.vpcNetns, ...layout.hosts.map((h) => h.netns), ...layout.nodes.map((n) => n.netns)];
  assert.deepEqual(names, ['demo-vpc', 'demo-host1', 'demo-node1', 'demo-node2', 'demo-node3']);
});

test('node files live under the lab state dir, one directory per node', () => {
  const node = labLayout('demo', 1).nodes[0]!;
  assert.equal(node.agentSocket, '/run/vpcnet-lab/demo/nodes/node1/agent.sock');
  assert.equal(node.cniBinDir, '/run/vpcnet-lab/demo/nodes/node1/cni/bin');
  assert.equal(node.cniConfDir, '/run/vpcnet-lab/demo/nodes/node1/cni/net.d');
  assert.equal(node.spoolDir, '/run/vpcnet-lab/demo/nodes/node1/spool');
});

test('the lab description has exactly the fields of the stable interface', () => {
  const d = labDescription(labLayout('demo', 1));
  assert.deepEqual(JSON.parse(JSON.stringify(d)), {
    name: 'demo',
    vpcNetns: 'demo-vpc',
    nodes: [
      {
        name: 'node1',
        netns: 'demo-node1',
        agentSocket: '/run/vpcnet-lab/demo/nodes/node1/agent.sock',
        cniBinDir: '/run/vpcnet-lab/demo/nodes/node1/cni/bin',
        cniConfDir: '/run/vpcnet-lab/demo/nodes/node1/cni/net.d',
      },
    ],
    vpcHosts: [{ netns: 'demo-host1', ip: '10.0.32.10' }],
    emulator: {
      ec2Endpoint: 'http://10.0.255.254',
      imdsEndpoint: 'http://169.254.169.254',
      kubeEndpoint: 'http://10.0.255.254:6443',
    },
  });
});

test('a lab name that could escape the state dir or is empty is refused', () => {
  for (const bad of ['', '../x', 'a/b', '-x', 'a b', 'x'.repeat(41)]) {
    assert.throws(() => checkLabName(bad), /invalid lab name/, bad);
  }
  checkLabName('vpclt0a1b2c');
});
