// aws-node's pod network settings kept by a platform team that switches, in a one-node lab whose
// agents and install step run with them (`lab up --agent-env`): POD_MTU on the pod's interfaces and
// AWS_VPC_ENI_MTU on the ENI links vpcnet configures (the primary ENI's link keeps its own),
// ANNOTATE_POD_IP writing `vpc.amazonaws.com/pod-ips` through the emulator's Kubernetes API and
// emptying it after DEL, DISABLE_POD_V6 chaining tuning so that IPv6 is off inside the pod, and
// AWS_EXTERNAL_SERVICE_CIDRS's rule in the node's namespace. The lab's namespaces and processes go
// in `after`.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readConfList, runChain } from '../../src/lab/cni-runtime.ts';
import { labLayout } from '../../src/lab/layout.ts';
import { unixJson } from '../../src/lab/unix-http.ts';
import {
  cni,
  emulatorState,
  type LabDesc,
  labDown,
  labUp,
  newPod,
  podCall,
  registerPod,
  sh,
  type TestPod,
  uniqueLabName,
  waitFor,
} from '../lab-fixture.ts';

const POD_MTU = 1400;
const ENI_MTU = 8000;

interface Link {
  ifname: string;
  address: string;
  mtu: number;
}

async function links(netns: string): Promise<Link[]> {
  return JSON.parse(await sh(['ip', '-n', netns, '-j', 'link', 'show'])) as Link[];
}

describe('pod network settings kept from aws-node', { timeout: 240_000 }, () => {
  const name = uniqueLabName('pk');
  let lab: LabDesc;
  let pod: TestPod;
  let podIp: string;

  const annotation = async (p: TestPod) => {
    const got = (await unixJson(
      labLayout(name, 0).emulator.adminSocket,
      'GET',
      `/api/v1/namespaces/${p.namespace}/pods/${p.name}`,
    )) as {
      metadata: { annotations?: Record<string, string> };
    };
    return got.metadata.annotations?.['vpc.amazonaws.com/pod-ips'];
  };

  before(async () => {
    lab = await labUp(name, [
      '--agent-env',
      `POD_MTU=${POD_MTU}`,
      '--agent-env',
      `AWS_VPC_ENI_MTU=${ENI_MTU}`,
      '--agent-env',
      'ANNOTATE_POD_IP=true',
      '--agent-env',
      'DISABLE_POD_V6=true',
      '--agent-env',
      'AWS_EXTERNAL_SERVICE_CIDRS=198.51.100.0/24',
    ]);
    pod = await newPod(name, 'p1', { uid: 'uid-p1' });
    await registerPod(name, lab.nodes[0]!.name, pod.namespace, pod.name, 'uid-p1');
    // Through the whole chain, with the IgnoreUnknown=1 containerd passes: the reference tuning
    // plugin refuses CNI_ARGS it does not know (the K8S_POD_* ones) without it.
    const node = lab.nodes[0]!;
    const call = podCall(node, 'ADD', pod);
    const list = await readConfList(join(node.cniConfDir, '10-vpcnet.conflist'));
    const result = (await runChain({ ...call, args: { IgnoreUnknown: '1', ...call.args } }, list)) as {
      ips: { address: string }[];
    };
    podIp = result.ips[0]!.address.split('/')[0]!;
  });
  after(async () => {
    await labDown(name);
  });

  test("the pod's interface has POD_MTU, and so has its host veth", async () => {
    const inPod = (await links(pod.netnsName)).find((l) => l.ifname === 'eth0');
    assert.equal(inPod?.mtu, POD_MTU);
    const hostVeths = (await links(lab.nodes[0]!.netns)).filter((l) => l.ifname.startsWith('vpc'));
    assert.deepEqual(
      hostVeths.map((l) => l.mtu),
      [POD_MTU],
    );
  });

  test("the secondary ENIs' links have AWS_VPC_ENI_MTU; the primary ENI's link keeps its own", async () => {
    const node = lab.nodes[0]!;
    // The warm pool attaches a second ENI after start; its link is configured before it serves.
    const mtus = await waitFor('a secondary ENI configured', async () => {
      const enis = (await emulatorState(name)).enis.filter((e) => e.attachment !== null);
      const byMac = new Map((await links(node.netns)).map((l) => [l.address, l.mtu]));
      const of = (primary: boolean) =>
        enis.filter((e) => (e.attachment?.deviceIndex === 0) === primary).map((e) => byMac.get(e.mac));
      const secondary = of(false);
      return secondary.length > 0 && secondary.every((m) => m === ENI_MTU)
        ? { primary: of(true), secondary }
        : undefined;
    });
    assert.equal(mtus.primary.length, 1);
    assert.notEqual(mtus.primary[0], ENI_MTU, "the primary ENI's link is the node's own");
  });

  test('IPv6 is off inside the pod: tuning, chained by install, wrote it', async () => {
    for (const dev of ['all', 'default', 'lo']) {
      const v = await sh([
        'ip',
        'netns',
        'exec',
        pod.netnsName,
        'cat',
        `/proc/sys/net/ipv6/conf/${dev}/disable_ipv6`,
      ]);
      assert.equal(v.trim(), '1', dev);
    }
    const conflist = JSON.parse(await sh(['cat', `${lab.nodes[0]!.cniConfDir}/10-vpcnet.conflist`])) as {
      plugins: { type: string }[];
    };
    assert.deepEqual(
      conflist.plugins.map((p) => p.type),
      ['vpcnet', 'portmap', 'tuning'],
    );
  });

  test("the external service CIDR is looked up in the main table, before the pods' ENI rules", async () => {
    const rules = JSON.parse(await sh(['ip', '-n', lab.nodes[0]!.netns, '-j', 'rule', 'show'])) as {
      priority: number;
      dst?: string;
      dstlen?: number;
      table: string;
    }[];
    assert.deepEqual(
      rules.filter((r) => r.priority === 1535),
      [{ priority: 1535, src: 'all', dst: '198.51.100.0', dstlen: 24, table: 'main' }],
    );
  });

  test("ANNOTATE_POD_IP: the pod's annotation names its address after ADD, and is emptied after DEL", async () => {
    await waitFor('the pod annotated', async () => ((await annotation(pod)) === podIp ? true : undefined));
    const del = await cni(lab.nodes[0]!, 'DEL', pod);
    assert.equal(del.exitCode, 0, del.stderr);
    await waitFor('the annotation emptied', async () => ((await annotation(pod)) === '' ? true : undefined));
  });
});
