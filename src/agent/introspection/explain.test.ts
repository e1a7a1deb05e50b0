// explain against an in-process agent (fake kernel, fake cloud): each recorded resource judged
// against the kernel, the ENI as EC2 describes it, and a pod's recent failures; and its route.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getJson } from '../../infra/unix-socket-json.ts';
import { attachmentHostVeth, attachmentIp } from '../../plan/attachment.ts';
import { agentWorlds } from '../testing/agent-world.ts';
import { cniRequest } from '../testing/cni-request.ts';
import { explainPod, type PodExplanation } from './explain.ts';
import { RecentErrors } from './recent-errors.ts';

const { world } = agentWorlds();

async function explainOver(socket: string, ns: string, pod: string): Promise<PodExplanation> {
  const { status, body } = await getJson(socket, `/v1/explain?namespace=${ns}&pod=${pod}`);
  assert.equal(status, 200);
  return body as PodExplanation;
}

test('a pod whose recorded network is whole: every resource present, its ENI attached with its address', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    assert.equal((await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')))).exitCode, 0);
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'web-0');
    assert.equal(x.attachments.length, 1);
    const a = x.attachments[0];
    assert.ok(a);
    assert.equal(a.phase, 'ready');
    assert.ok(a.resources.length >= 8);
    assert.deepEqual(
      a.resources.filter((r) => r.state !== 'present'),
      [],
    );
    assert.equal(a.eni?.attached, true);
    assert.equal(a.eni?.addressAssigned, true);
    assert.match(x.summary[0] ?? '', /everything recorded is in place/);
  } finally {
    await agent.stop();
  }
});

test('a deleted host veth is reported missing, with what went with it', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    const veth = attachmentHostVeth(agent.ledger.list()[0]!);
    w.kernel.deleteLink(veth);
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'web-0');
    const vethVerdict = x.attachments[0]?.resources.find((r) => r.kind === 'veth');
    assert.equal(vethVerdict?.state, 'missing');
    assert.match(vethVerdict?.problem ?? '', new RegExp(`host veth ${veth} missing`));
    assert.match(
      x.summary[0] ?? '',
      /recorded resources are missing or different: veth .*reconcile loop restores/,
    );
  } finally {
    await agent.stop();
  }
});

test('an address EC2 no longer lists on its ENI makes the VPC address missing, in EC2 words', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    const ip = attachmentIp(agent.ledger.list()[0]!) ?? '';
    await w.cloud.unassignPrivateIps('eni-primary', [ip]);
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'web-0');
    const a = x.attachments[0];
    assert.equal(a?.eni?.attached, true);
    assert.equal(a?.eni?.addressAssigned, false);
    assert.equal(a?.resources.find((r) => r.kind === 'vpcAddress')?.state, 'missing');
    assert.match(a?.summary ?? '', new RegExp(`EC2 no longer lists ${ip.replace(/\./g, '\\.')}`));
  } finally {
    await agent.stop();
  }
});

test('EC2 failing to answer leaves the ENI unjudged, and says so', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    w.cloud.failNext('describeInstanceEnis', new Error('RequestLimitExceeded'));
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'web-0');
    assert.equal(x.attachments[0]?.eni?.attached, undefined);
    assert.match(x.attachments[0]?.eni?.text ?? '', /could not be asked.*RequestLimitExceeded/);
    assert.equal(x.attachments[0]?.resources.find((r) => r.kind === 'vpcAddress')?.state, 'unchecked');
  } finally {
    await agent.stop();
  }
});

test('a pod with no record whose ADD failed: says what no record means and shows the failure', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const res = await agent.cni(cniRequest('ADD', 'c9', `${w.dir}/no-such-netns`, 'web-1'));
    assert.equal(res.exitCode, 1);
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'web-1');
    assert.deepEqual(x.attachments, []);
    assert.match(x.summary[0] ?? '', /no record of default\/web-1: no ADD for it reached/);
    assert.equal(x.recentErrors.length, 1);
    assert.equal(x.recentErrors[0]?.command, 'ADD');
    assert.equal(x.recentErrors[0]?.containerId, 'c9');
    assert.match(x.summary[1] ?? '', /^Its latest failure: ADD/);
    // The same failure is in the state, for status.
    const state = agent.introspect() as unknown as { recentErrors: { pod?: string }[] };
    assert.equal(state.recentErrors[0]?.pod, 'web-1');
  } finally {
    await agent.stop();
  }
});

test('a pod the agent never heard of: the runtime probably did not run the plugin', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'ghost');
    assert.deepEqual(x.recentErrors, []);
    assert.match(x.summary[1] ?? '', /did not run the plugin/);
  } finally {
    await agent.stop();
  }
});

test('two sandboxes of one pod are both explained, and the summary says why there are two', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'a279', await w.netns('old')));
    await agent.cni(cniRequest('ADD', '30c8', await w.netns('new')));
    const x = await explainOver(`${w.dir}/agent.sock`, 'default', 'web-0');
    assert.deepEqual(x.attachments.map((a) => a.containerId).sort(), ['30c8', 'a279']);
    assert.ok(x.summary.some((s) => s.startsWith('2 sandboxes are recorded')));
  } finally {
    await agent.stop();
  }
});

test('GET /v1/explain without namespace or pod is refused with 400', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const { status, body } = await getJson(`${w.dir}/agent.sock`, '/v1/explain?pod=web-0');
    assert.equal(status, 400);
    assert.match(JSON.stringify(body), /namespace and pod/);
  } finally {
    await agent.stop();
  }
});

test('a kernel that cannot be read leaves every resource unchecked, never present', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    await agent.cni(cniRequest('ADD', 'c1', await w.netns('a')));
    const deps = {
      ledger: agent.ledger,
      dataplane: {
        inspect: async () => {
          throw new Error('netlink helper gone');
        },
      },
      cloud: w.cloud,
      meta: w.cloud.meta,
      manager: { lostEni: () => undefined },
      recentErrors: new RecentErrors(Date.now),
    };
    const x = await explainPod(deps, 'default', 'web-0');
    const states = new Set(x.attachments[0]?.resources.map((r) => r.state));
    assert.deepEqual([...states], ['unchecked']);
    assert.match(
      x.attachments[0]?.resources[1]?.problem ?? '',
      /kernel could not be read: netlink helper gone/,
    );
    assert.match(x.summary[0] ?? '', /could not be read/);
  } finally {
    await agent.stop();
  }
});
