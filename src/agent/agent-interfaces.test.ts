// Interfaces of one container, in-process (see testing/agent-world.ts): a repeated ADD of an
// attachment fails as CNI 1.0 requires and leaves the first as it was; a second interface of the
// same container is an attachment of its own, and its DEL leaves the first whole.
import assert from 'node:assert/strict';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { attachmentHostVeth } from '../plan/attachment.ts';
import { notANetworkNamespace } from './cni-ops/pod-netns.ts';
import { agentWorlds } from './testing/agent-world.ts';
import { cniRequest, ipOf } from './testing/cni-request.ts';

const { world } = agentWorlds();

function onInterface(req: ReturnType<typeof cniRequest>, ifName: string): ReturnType<typeof cniRequest> {
  return { ...req, env: { ...req.env, CNI_IFNAME: ifName } };
}

test('a repeated ADD fails with code 130 naming the interface, and the attachment keeps its network and address', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    const first = await agent.cni(cniRequest('ADD', 'c1', ns));
    assert.equal(first.exitCode, 0, first.stdout);
    const before = agent.ledger.list();
    const veths = w.kernel.veths();
    const again = await agent.cni(cniRequest('ADD', 'c1', ns));
    assert.notEqual(again.exitCode, 0);
    const err = JSON.parse(again.stdout) as { code: number; msg: string; details: string };
    assert.equal(err.code, 130);
    assert.match(err.msg, /interface eth0 of container c1 already exists/);
    assert.match(err.details, new RegExp(`with ${ipOf(first.stdout).replaceAll('.', '\\.')}; .*DEL`));
    assert.deepEqual(agent.ledger.list(), before, 'the record is unchanged');
    assert.deepEqual(w.kernel.veths(), veths);
    assert.equal(
      (await agent.cni(cniRequest('CHECK', 'c1', ns))).exitCode,
      0,
      'the first ADD’s network is whole',
    );
  } finally {
    await agent.stop();
  }
});

test('an ADD whose interface is no longer in the namespace builds it again, with the same address', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    const first = await agent.cni(cniRequest('ADD', 'c1', ns));
    const veth = attachmentHostVeth(agent.ledger.list()[0]!);
    w.kernel.deleteLink(veth); // takes eth0 in the pod with it
    const again = await agent.cni(cniRequest('ADD', 'c1', ns));
    assert.equal(again.exitCode, 0, again.stdout);
    assert.equal(ipOf(again.stdout), ipOf(first.stdout));
    assert.equal((await agent.cni(cniRequest('CHECK', 'c1', ns))).exitCode, 0);
  } finally {
    await agent.stop();
  }
});

test('a second interface of the container gets its own address and routes; its DEL leaves eth0 whole', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const ns = await w.netns('a');
    const eth0 = await agent.cni(cniRequest('ADD', 'c1', ns));
    const eth1 = await agent.cni(onInterface(cniRequest('ADD', 'c1', ns), 'eth1'));
    assert.equal(eth1.exitCode, 0, eth1.stdout);
    assert.notEqual(ipOf(eth1.stdout), ipOf(eth0.stdout));
    const result = JSON.parse(eth1.stdout) as { interfaces: { name: string; sandbox?: string }[] };
    assert.ok(result.interfaces.some((i) => i.name === 'eth1' && i.sandbox === ns));
    assert.equal((await agent.cni(cniRequest('CHECK', 'c1', ns))).exitCode, 0);
    assert.equal((await agent.cni(onInterface(cniRequest('CHECK', 'c1', ns), 'eth1'))).exitCode, 0);
    // Traffic from eth1's address leaves through eth1: a rule in the pod, to eth1's own table.
    const podRules = () => w.kernel.ns(ns).rules.filter((r) => r.from === `${ipOf(eth1.stdout)}/32`);
    assert.equal(podRules().length, 1);

    assert.equal((await agent.cni(onInterface(cniRequest('DEL', 'c1', ns), 'eth1'))).exitCode, 0);
    assert.deepEqual(podRules(), [], 'the DEL removed its rule inside the pod');
    assert.equal(w.kernel.link('eth1', ns), undefined);
    assert.equal((await agent.cni(cniRequest('CHECK', 'c1', ns))).exitCode, 0, 'eth0 is whole');
    assert.deepEqual(w.kernel.snatElements(), [ipOf(eth0.stdout)]);
  } finally {
    await agent.stop();
  }
});

test('an ADD into the node’s own namespace or PID 1’s is refused (code 4) before anything is made', async () => {
  const w = await world();
  const agent = await w.start();
  try {
    const self = JSON.parse((await agent.cni(cniRequest('ADD', 'c-node', '/proc/self/ns/net'))).stdout);
    assert.equal(self.code, 4, JSON.stringify(self));
    assert.match(self.msg, /is the node's own network namespace/);
    // PID 1's namespace: refused as the node's, or (where this process may not open it) as unknown.
    const init = JSON.parse((await agent.cni(cniRequest('ADD', 'c-init', '/proc/1/ns/net'))).stdout);
    assert.ok([3, 4].includes(init.code), JSON.stringify(init));
    assert.deepEqual(agent.ledger.list(), []);
    assert.deepEqual(w.kernel.veths(), []);
    assert.equal(agent.pool.stats(Date.now()).assigned, 0, 'no address was taken');
  } finally {
    await agent.stop();
  }
});

test('an ADD into a path that is no network namespace (file, directory, mnt namespace, links to them) is refused (code 4) before anything is made', async () => {
  const w = await world();
  const agent = await w.start({ notANetworkNamespace });
  try {
    const file = await w.netns('plain-file');
    const dir = join(w.dir, 'a-dir');
    await mkdir(dir);
    await symlink(file, join(w.dir, 'link-to-file'));
    await symlink('/proc/self/ns/mnt', join(w.dir, 'link-to-mnt'));
    const cases: Array<[string, string]> = [
      [file, 'a regular file'],
      [dir, 'a directory'],
      ['/proc/self/ns/mnt', 'a mnt namespace'],
      [join(w.dir, 'link-to-file'), 'a regular file'],
      [join(w.dir, 'link-to-mnt'), 'a mnt namespace'],
    ];
    for (const [k, [path, what]] of cases.entries()) {
      const out = await agent.cni(cniRequest('ADD', `c${k}`, path, `p${k}`, `u${k}`));
      assert.equal(out.exitCode, 1, path);
      const err = JSON.parse(out.stdout) as { code: number; msg: string };
      assert.equal(err.code, 4, path);
      assert.equal(err.msg, `CNI_NETNS ${path} is not a network namespace: it is ${what}`);
    }
    assert.deepEqual(agent.ledger.list(), [], 'no attachment was recorded');
    assert.deepEqual(w.kernel.veths(), []);
    assert.equal(agent.pool.stats(Date.now()).assigned, 0, 'no address was taken');
  } finally {
    await agent.stop();
  }
});
