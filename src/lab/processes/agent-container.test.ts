import assert from 'node:assert/strict';
import { test } from 'node:test';
import { labLayout } from '../layout.ts';
import {
  agentContainerArgv,
  agentContainerDirs,
  agentContainerName,
  containerAgentSpec,
  containerEnvNames,
  installFromImageArgv,
} from './agent-container.ts';

const layout = labLayout('im1', 2);
const node = layout.nodes[1]!;

/** The values given to each occurrence of `flag` in argv. */
function values(argv: readonly string[], flag: string): string[] {
  return argv.flatMap((a, i) => (a === flag ? [argv[i + 1] ?? ''] : []));
}

test('the agent container joins the node network namespace with only NET_ADMIN and SYS_ADMIN', () => {
  const argv = agentContainerArgv({ image: 'localhost/vpcnet:1', name: 'c', lab: 'im1', node, envNames: [] });
  assert.deepEqual(argv.slice(0, 4), ['podman', '--runtime', 'runc', 'run']);
  assert.deepEqual(values(argv, '--network'), ['ns:/var/run/netns/im1-node2']);
  assert.ok(argv.includes('--cap-drop=all'));
  assert.deepEqual(
    argv.filter((a) => a.startsWith('--cap-add=')),
    ['--cap-add=NET_ADMIN', '--cap-add=SYS_ADMIN'],
  );
  assert.ok(!argv.includes('--privileged'));
  assert.deepEqual(argv.slice(-2), ['localhost/vpcnet:1', '/opt/vpcnet/bin/vpcnetd']);
});

test('the runtime netns dir is mounted with rslave propagation, the node dirs each at their own path', () => {
  const argv = agentContainerArgv({ image: 'i', name: 'c', lab: 'im1', node, envNames: [] });
  assert.deepEqual(values(argv, '--mount'), [
    'type=bind,source=/var/run/netns,destination=/var/run/netns,bind-propagation=rslave',
  ]);
  const volumes = values(argv, '--volume');
  assert.deepEqual(
    volumes,
    agentContainerDirs(node).map((d) => `${d}:${d}`),
  );
  for (const dir of [node.stateDir, node.spoolDir, node.cniBinDir, node.cniConfDir, node.dir]) {
    assert.ok(volumes.includes(`${dir}:${dir}`), `${dir} is mounted`);
  }
});

test('environment goes by name only: values (credentials) never reach the command line', () => {
  const names = containerEnvNames({
    AWS_SECRET_ACCESS_KEY: 'lab',
    VPCNET_NODE_NAME: 'node2',
    PATH: '/usr/bin',
    HOME: '/root',
    NODE_OPTIONS: '--import tsx',
    NODE_EXTRA_CA_CERTS: '/etc/host-ca.pem',
    UNSET: undefined,
  });
  assert.deepEqual(names, ['AWS_SECRET_ACCESS_KEY', 'VPCNET_NODE_NAME']);
  const argv = agentContainerArgv({ image: 'i', name: 'c', lab: 'im1', node, envNames: names });
  assert.deepEqual(values(argv, '--env'), names);
  assert.ok(!argv.some((a) => a.includes('=lab')));
});

test('the spec records the podman client by a command-line piece unique to this node', () => {
  const spec = containerAgentSpec(layout, node, 'i', { VPCNET_NODE_NAME: 'node2' }, 'agent-node2');
  const name = agentContainerName(layout, node);
  assert.equal(name, 'vpcnet-lab-im1-node2');
  assert.ok(`${spec.argv.join(' ')} `.includes(spec.cmdlineMatch));
  const other = containerAgentSpec(layout, layout.nodes[0]!, 'i', {}, 'agent-node1');
  assert.ok(!`${other.argv.join(' ')} `.includes(spec.cmdlineMatch));
  assert.equal(spec.logFile, node.agentLog);
  assert.deepEqual(values(spec.argv, '--label'), ['io.vpcnet.lab=im1']);
});

test("the plugin is installed by the image's vpcnetctl with the image's partner plugins, without capabilities", () => {
  const argv = installFromImageArgv(node, 'localhost/vpcnet:1');
  assert.ok(argv.includes('--cap-drop=all'));
  assert.ok(!argv.some((a) => a.startsWith('--cap-add')));
  const cmd = argv.slice(argv.indexOf('localhost/vpcnet:1') + 1);
  assert.deepEqual(cmd.slice(0, 2), ['/opt/vpcnet/bin/vpcnetctl', 'install']);
  assert.deepEqual(values(cmd, '--partner-plugins-dir'), ['/opt/vpcnet/cni-partners']);
  assert.deepEqual(values(cmd, '--cni-bin-dir'), [node.cniBinDir]);
  assert.deepEqual(values(cmd, '--agent-socket'), [node.agentSocket]);
});
