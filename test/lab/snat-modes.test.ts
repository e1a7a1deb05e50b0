// SNAT choices seen from outside the VPC: a pod connects to hosts outside the VPC's CIDRs, and
// each host reports the source address it sees (a small TCP server that answers with its peer's
// address). Proves, on the real kernel: default SNAT to the node's primary IP, an excluded CIDR
// reached with the pod's own address, a CIDR added to the VPC at run time becoming un-SNATed after
// the refresh (without a restart), and the port flag of AWS_VPC_K8S_CNI_RANDOMIZESNAT in the rule
// the kernel holds; and, on a second lab, AWS_VPC_K8S_CNI_EXTERNALSNAT leaving the pod's address.
// Test turn: shared (it waits on its own lab's agents and timers; no CPU or latency bound).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { labLayout } from '../../src/lab/layout.ts';
import { addOutsideHost, type OutsideHost } from '../../src/lab/outside-host.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  addPod,
  type LabDesc,
  labDown,
  labUp,
  newPod,
  nodePrimaryIpv4,
  sh,
  uniqueLabName,
} from '../lab-fixture.ts';
import { startNetnsServer, stopNetnsServers } from '../netns-server.ts';

const PORT = 7077;
const PEER_SERVER = `require('node:net').createServer((s) => s.end(s.remoteAddress + '\\n')).listen(${PORT}, '0.0.0.0', () => console.log('listening'))`;
const PEER_CLIENT = `const s = require('node:net').connect(${PORT}, process.argv[1]); let d = ''; s.on('data', (c) => { d += c; }); s.on('end', () => console.log(d.trim())); s.on('error', (e) => { console.error(e.message); process.exit(1); }); s.setTimeout(5000, () => { console.error('timeout'); process.exit(1); });`;

/** The source address `host` sees for a connection from the pod namespace `podNetns`. */
async function seenBy(podNetns: string, host: OutsideHost): Promise<string> {
  return (await sh(['ip', 'netns', 'exec', podNetns, process.execPath, '-e', PEER_CLIENT, host.ip])).trim();
}

describe('SNAT modes seen by hosts outside the VPC', { timeout: 240_000 }, () => {
  const name = uniqueLabName('sn');
  const servers: ChildProcess[] = [];
  let lab: LabDesc;
  let plain: OutsideHost;
  let excluded: OutsideHost;
  let podNetns: string;
  let podIp: string;

  before(async () => {
    lab = await labUp(name, [
      '--agent-env',
      'AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS=203.0.113.0/24',
      '--agent-env',
      'AWS_VPC_K8S_CNI_RANDOMIZESNAT=hashrandom',
      '--agent-env',
      'VPCNET_VPC_CIDR_REFRESH_SECONDS=1',
    ]);
    plain = await addOutsideHost(name, lab.vpcNetns, 'out1', '198.51.100');
    excluded = await addOutsideHost(name, lab.vpcNetns, 'out2', '203.0.113');
    await startNetnsServer(plain.netns, PEER_SERVER, servers);
    await startNetnsServer(excluded.netns, PEER_SERVER, servers);
    const pod = await newPod(name, 'p1');
    podNetns = pod.netnsName;
    podIp = (await addPod(lab.nodes[0]!, pod)).ip;
  });
  after(async () => {
    stopNetnsServers(servers);
    await labDown(name);
  });

  test("by default a host outside the VPC sees the node's primary IP, not the pod's", async () => {
    const seen = await seenBy(podNetns, plain);
    assert.equal(seen, await nodePrimaryIpv4(lab.nodes[0]!));
    assert.notEqual(seen, podIp);
  });

  test("a host in AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS sees the pod's own address", async () => {
    assert.equal(await seenBy(podNetns, excluded), podIp);
  });

  test('RANDOMIZESNAT=hashrandom: the rule the kernel holds carries the random flag', async () => {
    const chain = await sh([
      'ip',
      'netns',
      'exec',
      lab.nodes[0]!.netns,
      'nft',
      'list',
      'chain',
      'ip',
      'vpcnet',
      'postrouting',
    ]);
    assert.match(chain, /snat to \S+ random\n/);
    assert.doesNotMatch(chain, /fully-random/);
  });

  test('a CIDR added to the VPC at run time is reached without SNAT once the agent has re-read it', async () => {
    await unixJson(labLayout(name, lab.nodes.length).emulator.adminSocket, 'POST', '/admin/vpc-cidrs', {
      cidr: '198.51.100.0/24',
    });
    let seen = '';
    // The refresh runs every second; give it ample time on a loaded machine.
    for (let i = 0; i < 60 && seen !== podIp; i++) {
      await new Promise((r) => setTimeout(r, 500));
      seen = await seenBy(podNetns, plain);
    }
    assert.equal(seen, podIp);
  });
});

describe('AWS_VPC_K8S_CNI_EXTERNALSNAT=true', { timeout: 240_000 }, () => {
  const name = uniqueLabName('sn');
  const servers: ChildProcess[] = [];
  let lab: LabDesc;

  before(async () => {
    lab = await labUp(name, ['--agent-env', 'AWS_VPC_K8S_CNI_EXTERNALSNAT=true']);
  });
  after(async () => {
    stopNetnsServers(servers);
    await labDown(name);
  });

  test("a host outside the VPC sees the pod's own address: the node translates nothing", async () => {
    const host = await addOutsideHost(name, lab.vpcNetns, 'out1', '198.51.100');
    await startNetnsServer(host.netns, PEER_SERVER, servers);
    const pod = await newPod(name, 'p1');
    const { ip } = await addPod(lab.nodes[0]!, pod);
    assert.equal(await seenBy(pod.netnsName, host), ip);
  });
});
