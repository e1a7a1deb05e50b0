// vpcnetctl explain against an in-process agent (fake kernel, fake cloud) over its socket.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentWorlds } from '../../agent/testing/agent-world.ts';
import { cniRequest } from '../../agent/testing/cni-request.ts';
import { attachmentHostVeth } from '../../plan/attachment.ts';
import { runCli } from '../main.ts';
import { captureCli } from '../testing/cli-capture.ts';
import { podArgument } from './explain.ts';

const { world } = agentWorlds();

test('explain of a whole pod exits 0 and lists its resources as present', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    const cli = captureCli();
    assert.equal(await runCli(['explain', 'default/web-0', '--agent-socket', `${w.dir}/agent.sock`], cli), 0);
    assert.match(
      cli.stdout(),
      /^default\/web-0\n {2}Sandbox c1 eth0 \(10\.0\.0\.\d+\): everything recorded is in place/,
    );
    assert.match(cli.stdout(), /^ {2}veth\s+veth \S+.*\s+present$/m);
    assert.match(cli.stdout(), /EC2: ENI eni-primary is attached to this instance/);
    assert.match(cli.stdout(), /Recent CNI errors: none/);
  } finally {
    await agent.stop();
  }
});

test('explain of a pod whose host veth was deleted exits 1 and says the veth is missing', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    const veth = attachmentHostVeth(agent.ledger.list()[0]!);
    w.kernel.deleteLink(veth);
    const cli = captureCli();
    assert.equal(
      await runCli(['explain', 'web-0', '-n', 'default', '--agent-socket', `${w.dir}/agent.sock`], cli),
      1,
    );
    assert.match(cli.stdout(), new RegExp(`missing\\s+host veth ${veth} missing`));
    const json = captureCli({ tty: true });
    await runCli(['explain', 'default/web-0', '--json', '--agent-socket', `${w.dir}/agent.sock`], json);
    const doc = JSON.parse(json.stdout()) as {
      attachments: { resources: { kind: string; state: string }[] }[];
    };
    assert.equal(doc.attachments[0]?.resources.find((r) => r.kind === 'veth')?.state, 'missing');
  } finally {
    await agent.stop();
  }
});

test('explain of an unknown pod exits 1 and says what having no record means', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const cli = captureCli();
    assert.equal(await runCli(['explain', 'default/ghost', '--agent-socket', `${w.dir}/agent.sock`], cli), 1);
    assert.match(cli.stdout(), /vpcnet has no record of default\/ghost/);
  } finally {
    await agent.stop();
  }
});

test('explain without an agent exits 3; without a pod it is a usage error', async () => {
  const down = captureCli();
  assert.equal(
    await runCli(['explain', 'default/web-0', '--agent-socket', '/nonexistent/agent.sock'], down),
    3,
  );
  assert.match(down.stderr(), /no agent answers on \/nonexistent\/agent\.sock/);
  const usage = captureCli();
  assert.equal(await runCli(['explain', 'web-0'], usage), 2);
  assert.match(usage.stderr(), /NAMESPACE\/POD/);
});

test('the pod is named NAMESPACE/POD or POD with -n NAMESPACE', () => {
  assert.deepEqual(podArgument(['kube-system/coredns'], undefined), {
    namespace: 'kube-system',
    pod: 'coredns',
  });
  assert.deepEqual(podArgument(['coredns'], 'kube-system'), { namespace: 'kube-system', pod: 'coredns' });
  assert.equal(podArgument(['coredns'], undefined), undefined);
  assert.equal(podArgument(['a/b/c'], undefined), undefined);
  assert.equal(podArgument(['/b'], undefined), undefined);
  assert.equal(podArgument(['a/b', 'c/d'], undefined), undefined);
  assert.equal(podArgument([], 'ns'), undefined);
});
