// The emulated resource controller through the emulator's HTTP APIs, as the agent and the lab
// drive it: a node label or the node's CNINode feature SecurityGroupsForPods asks for a trunk ENI;
// POST /admin/pod-eni gives a pod a branch ENI on the lowest free VLAN; deleting the pod releases
// it. With custom networking (the CNINode's CustomNetworking, or the node label
// vpc.amazonaws.com/eniConfig) trunk and branch ENIs go into the ENIConfig's subnet.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SUBNET_A, SUBNET_SMALL, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

interface DumpedEni {
  eniId: string;
  mac: string;
  primaryIp: string;
  subnetId: string;
  interfaceType: string;
  description: string;
  securityGroupIds: string[];
  tags: Record<string, string>;
  attachment: { instanceId: string; deviceIndex: number } | null;
  trunkAssociation: { trunkEniId: string; vlanId: number } | null;
}

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

function call(method: string, path: string, body?: unknown, contentType?: string) {
  return t.kube(method, path, body, contentType);
}

async function enis(): Promise<DumpedEni[]> {
  return (await call('GET', '/admin/state')).json.enis as DumpedEni[];
}

function labelNode(node: string, value: string) {
  return call(
    'PATCH',
    `/api/v1/nodes/${node}`,
    { metadata: { labels: { 'vpc.amazonaws.com/has-trunk-attached': value } } },
    'application/merge-patch+json',
  );
}

/** Polls the state dump until `pick` finds something (the controller reacts asynchronously). */
async function eventually<T>(pick: (e: DumpedEni[]) => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = pick(await enis());
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not seen in 10 s: ${what}`);
    await sleep(20);
  }
}

async function nodeWithTrunk(node: string, instanceType = 'm5.large') {
  const inst = await t.emulator.launchInstance({
    instanceType,
    subnetId: SUBNET_A,
    nodeName: node,
    securityGroupIds: ['sg-node'],
  });
  await labelNode(node, 'false');
  const trunk = await eventually(
    (all) => all.find((e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === inst.instanceId),
    `trunk of ${node}`,
  );
  return { inst, trunk };
}

async function createPod(namespace: string, name: string, nodeName: string | undefined) {
  const r = await call('POST', `/api/v1/namespaces/${namespace}/pods`, {
    metadata: { name },
    spec: { ...(nodeName === undefined ? {} : { nodeName }), containers: [{ name: 'c', image: 'pause' }] },
  });
  assert.equal(r.status, 201);
  return r.json as { metadata: { uid: string } };
}

function podEni(namespace: string, name: string, securityGroupIds = ['sg-pod']) {
  return call('POST', '/admin/pod-eni', { namespace, name, securityGroupIds });
}

describe('trunk ENIs', () => {
  test('labelling a node has-trunk-attached=false attaches one trunk ENI at the lowest free device index', async () => {
    const { inst, trunk } = await nodeWithTrunk('trunk-1');
    assert.equal(trunk.attachment?.deviceIndex, 1);
    assert.equal(trunk.subnetId, SUBNET_A);
    assert.deepEqual(trunk.securityGroupIds, ['sg-node']);
    assert.match(trunk.description, new RegExp(`trunk ENI of ${inst.instanceId} \\(node trunk-1\\)`));
    // Asked again: still one trunk.
    await labelNode('trunk-1', 'false');
    await labelNode('trunk-1', 'true');
    // The controller works one item at a time: its answer to a request queued after the label
    // events (a pod it does not know) means it has handled them.
    assert.equal((await podEni('default', 'no-such-pod')).status, 404);
    const trunks = (await enis()).filter(
      (e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === inst.instanceId,
    );
    assert.equal(trunks.length, 1);
  });

  test('a node of a type without trunking gets no trunk ENI; one labelled true gets one, as the real controller reads the label whatever its value', async () => {
    const m5 = await t.emulator.launchInstance({
      instanceType: 'm5.large',
      subnetId: SUBNET_A,
      nodeName: 'says-true',
    });
    const t3 = await t.emulator.launchInstance({
      instanceType: 't3.medium',
      subnetId: SUBNET_A,
      nodeName: 'small',
    });
    await labelNode('says-true', 'true');
    await labelNode('small', 'false');
    await eventually(
      () =>
        t.logs.some((l) => l.msg === 'controller gives no trunk ENI' && l.node === 'small')
          ? true
          : undefined,
      'the refusal for t3.medium in the log',
    );
    await eventually(
      (all) => all.find((e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === m5.instanceId),
      'the trunk of the node labelled true',
    );
    const owners = new Set(
      (await enis()).filter((e) => e.interfaceType === 'trunk').map((e) => e.attachment?.instanceId),
    );
    assert.ok(!owners.has(t3.instanceId));
  });
});

const CNI_NODE_API = '/apis/vpcresources.k8s.aws/v1alpha1/cninodes';
const ENI_CONFIG_API = '/apis/crd.k8s.amazonaws.com/v1alpha1/eniconfigs';
/** The ENIConfig subnet of these tests: in the nodes' zone, apart from their own subnet. */
const POD_SUBNET = { id: SUBNET_SMALL, cidr: '10.0.1.0/28' };

async function cniNode(node: string, features: { name: string; value?: string }[]) {
  const r = await call('POST', CNI_NODE_API, { metadata: { name: node }, spec: { features } });
  assert.equal(r.status, 201);
}

async function eniConfig(name: string, subnet: string, securityGroups?: string[]) {
  const spec = { subnet, ...(securityGroups === undefined ? {} : { securityGroups }) };
  const r = await call('POST', ENI_CONFIG_API, { metadata: { name }, spec });
  assert.equal(r.status, 201);
}

/** An m5.large node in SUBNET_A whose instance has the security group sg-node. */
function launchNode(nodeName: string) {
  return t.emulator.launchInstance({
    instanceType: 'm5.large',
    subnetId: SUBNET_A,
    nodeName,
    securityGroupIds: ['sg-node'],
  });
}

async function trunkOf(instanceId: string, what: string): Promise<DumpedEni> {
  return eventually(
    (all) => all.find((e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === instanceId),
    what,
  );
}

describe('CNINode features', () => {
  test('SecurityGroupsForPods in the CNINode, with no label, gets the node a trunk in its own subnet, and its pods branch ENIs there', async () => {
    const inst = await launchNode('sgp-1');
    await cniNode('sgp-1', [{ name: 'SecurityGroupsForPods' }]);
    const trunk = await trunkOf(inst.instanceId, 'the trunk asked for by the CNINode feature');
    assert.deepEqual([trunk.subnetId, trunk.securityGroupIds], [SUBNET_A, ['sg-node']]);
    await createPod('sgp', 'p1', 'sgp-1');
    const branch = await podEni('sgp', 'p1');
    assert.equal(branch.status, 201);
    assert.equal(branch.json.subnetCidr, '10.0.0.0/24');
  });

  test('a CNINode without SecurityGroupsForPods, on a node without the label, gets no trunk', async () => {
    const inst = await launchNode('plain-1');
    await eniConfig('plain-cfg', POD_SUBNET.id);
    await cniNode('plain-1', [{ name: 'CustomNetworking', value: 'plain-cfg' }]);
    // The controller works one item at a time: its answer to a request queued after the CNINode's
    // event (a pod it does not know) means it has handled it.
    assert.equal((await podEni('default', 'no-such-pod')).status, 404);
    assert.ok(
      !(await enis()).some(
        (e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === inst.instanceId,
      ),
    );
  });

  test("with CustomNetworking listed, the trunk (with the ENIConfig's security groups) and the branch ENIs go into the ENIConfig's subnet", async () => {
    const inst = await launchNode('cn-1');
    await eniConfig('pods-2a', POD_SUBNET.id, ['sg-eniconfig']);
    await cniNode('cn-1', [
      { name: 'SecurityGroupsForPods' },
      { name: 'CustomNetworking', value: 'pods-2a' },
    ]);
    const trunk = await trunkOf(inst.instanceId, 'the trunk of a custom networking node');
    assert.deepEqual([trunk.subnetId, trunk.securityGroupIds], [POD_SUBNET.id, ['sg-eniconfig']]);
    await createPod('cn', 'p1', 'cn-1');
    const branch = await podEni('cn', 'p1', ['sg-pod']);
    assert.equal(branch.status, 201);
    assert.equal(branch.json.subnetCidr, POD_SUBNET.cidr);
    const eni = (await enis()).find((e) => e.eniId === branch.json.eniId)!;
    assert.deepEqual([eni.subnetId, eni.securityGroupIds], [POD_SUBNET.id, ['sg-pod']]);
  });

  test("the node label vpc.amazonaws.com/eniConfig names the ENIConfig too (and wins); one without security groups gives the trunk the instance's", async () => {
    const inst = await launchNode('cn-label');
    await eniConfig('by-label', POD_SUBNET.id);
    await cniNode('cn-label', [{ name: 'CustomNetworking', value: 'no-such-config' }]);
    const r = await call(
      'PATCH',
      '/api/v1/nodes/cn-label',
      {
        metadata: {
          labels: {
            'vpc.amazonaws.com/eniConfig': 'by-label',
            'vpc.amazonaws.com/has-trunk-attached': 'false',
          },
        },
      },
      'application/merge-patch+json',
    );
    assert.equal(r.status, 200);
    const trunk = await trunkOf(inst.instanceId, 'the trunk of a node labelled with its ENIConfig');
    assert.deepEqual([trunk.subnetId, trunk.securityGroupIds], [POD_SUBNET.id, ['sg-node']]);
  });

  test('CustomNetworking naming a missing ENIConfig: no trunk and the reason logged; once the ENIConfig exists the trunk goes into its subnet', async () => {
    const inst = await launchNode('cn-late');
    await cniNode('cn-late', [
      { name: 'SecurityGroupsForPods' },
      { name: 'CustomNetworking', value: 'late-cfg' },
    ]);
    await eventually(
      () =>
        t.logs.some(
          (l) =>
            l.msg === 'controller could not attach a trunk ENI' &&
            l.node === 'cn-late' &&
            /ENIConfig late-cfg \(CNINode feature CustomNetworking\), which does not exist/.test(
              String(l.error),
            ),
        )
          ? true
          : undefined,
      'the missing ENIConfig in the log',
    );
    assert.ok(
      !(await enis()).some(
        (e) => e.interfaceType === 'trunk' && e.attachment?.instanceId === inst.instanceId,
      ),
    );
    await eniConfig('late-cfg', POD_SUBNET.id);
    const trunk = await trunkOf(inst.instanceId, 'the trunk once the ENIConfig exists');
    assert.equal(trunk.subnetId, POD_SUBNET.id);
  });
});

describe('branch ENIs', () => {
  test('pod-eni refuses a missing pod (404), an unbound pod and a node without trunk (409), saying why', async () => {
    const missing = await podEni('b', 'ghost');
    assert.equal(missing.status, 404);
    assert.match(String(missing.json.message), /pod b\/ghost not found/);
    await createPod('b', 'unbound', undefined);
    const unbound = await podEni('b', 'unbound');
    assert.equal(unbound.status, 409);
    assert.match(String(unbound.json.message), /not bound to a node/);
    await t.emulator.launchInstance({ instanceType: 'm5.large', subnetId: SUBNET_A, nodeName: 'no-trunk' });
    await createPod('b', 'early', 'no-trunk');
    const early = await podEni('b', 'early');
    assert.equal(early.status, 409);
    assert.match(String(early.json.message), /node no-trunk .* has no trunk ENI yet/);
    assert.equal((await call('POST', '/admin/pod-eni', { namespace: 'b', name: 'early' })).status, 400);
  });

  test('pods get branch ENIs on VLAN IDs by first fit; a deleted pod frees its branch ENI and VLAN for the next pod', async () => {
    const { trunk } = await nodeWithTrunk('branch-1');
    const p1 = await createPod('app', 'p1', 'branch-1');
    const first = await podEni('app', 'p1', ['sg-a', 'sg-b']);
    assert.equal(first.status, 201);
    const e1 = first.json as {
      eniId: string;
      ifAddress: string;
      privateIp: string;
      vlanId: number;
      subnetCidr: string;
    };
    assert.equal(e1.vlanId, 1);
    assert.equal(e1.subnetCidr, '10.0.0.0/24');
    const branch = (await enis()).find((e) => e.eniId === e1.eniId)!;
    assert.deepEqual(
      [branch.interfaceType, branch.mac, branch.primaryIp, branch.securityGroupIds, branch.trunkAssociation],
      [
        'branch',
        e1.ifAddress,
        e1.privateIp,
        ['sg-a', 'sg-b'],
        { ...branch.trunkAssociation, trunkEniId: trunk.eniId, vlanId: 1 },
      ],
    );
    assert.equal(branch.tags['vpcnet-emulator/pod-uid'], p1.metadata.uid);
    const pod = await call('GET', '/api/v1/namespaces/app/pods/p1');
    const annotations = (pod.json.metadata as { annotations: Record<string, string> }).annotations;
    assert.deepEqual(JSON.parse(annotations['vpc.amazonaws.com/pod-eni'] ?? ''), [e1]);
    // Asked again for the same pod: the same branch.
    assert.deepEqual((await podEni('app', 'p1')).json, e1);

    await createPod('app', 'p2', 'branch-1');
    assert.equal((await podEni('app', 'p2')).json.vlanId, 2);
    assert.equal((await call('DELETE', '/api/v1/namespaces/app/pods/p1')).status, 200);
    await eventually(
      (all) => (all.some((e) => e.eniId === e1.eniId) ? undefined : true),
      'the branch of p1 gone',
    );
    await createPod('app', 'p3', 'branch-1');
    assert.equal((await podEni('app', 'p3')).json.vlanId, 1);
  });

  test('a trunk full to its instance type limit refuses the next pod with the EC2 reason and leaves no ENI behind', async () => {
    await nodeWithTrunk('full-1');
    for (let k = 1; k <= 9; k++) {
      await createPod('full', `p${k}`, 'full-1');
      assert.equal((await podEni('full', `p${k}`)).json.vlanId, k);
    }
    const before = (await enis()).length;
    await createPod('full', 'p10', 'full-1');
    const refused = await podEni('full', 'p10');
    assert.equal(refused.status, 409);
    assert.match(
      String(refused.json.message),
      /BranchInterfaceLimitExceeded: .*limit of instance type m5\.large/,
    );
    assert.equal((await enis()).length, before);
  });

  test('the pod-eni annotation reaches pod watchers as a MODIFIED event', async () => {
    await nodeWithTrunk('watched-1');
    await createPod('w', 'watched', 'watched-1');
    const list = await call('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dwatched-1');
    const rv = (list.json.metadata as { resourceVersion: string }).resourceVersion;
    const event = await new Promise<{
      type: string;
      object: { metadata: { annotations?: Record<string, string> } };
    }>((resolve, reject) => {
      const req = request(
        `${t.url}/api/v1/pods?watch=true&resourceVersion=${rv}&fieldSelector=spec.nodeName%3Dwatched-1`,
        (res) => {
          res.setEncoding('utf8');
          let buf = '';
          res.on('data', (chunk: string) => {
            buf += chunk;
            const nl = buf.indexOf('\n');
            if (nl >= 0) {
              req.destroy();
              resolve(JSON.parse(buf.slice(0, nl)));
            }
          });
          podEni('w', 'watched').catch(reject);
        },
      );
      req.on('error', () => undefined);
      req.end();
    });
    assert.equal(event.type, 'MODIFIED');
    assert.match(event.object.metadata.annotations?.['vpc.amazonaws.com/pod-eni'] ?? '', /"vlanId":1/);
  });
});
