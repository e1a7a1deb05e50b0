// The emulated resource controller through the emulator's HTTP APIs, as the agent and the lab
// drive it: a node label asks for a trunk ENI; POST /admin/pod-eni gives a pod a branch ENI on
// the lowest free VLAN; deleting the pod releases it.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

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

async function call(method: string, path: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { 'content-type': contentType },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: (text === '' ? undefined : JSON.parse(text)) as Record<string, unknown>,
  };
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

  test('a node labelled true, or of a type without trunking, gets no trunk ENI', async () => {
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
    const owners = new Set(
      (await enis()).filter((e) => e.interfaceType === 'trunk').map((e) => e.attachment?.instanceId),
    );
    assert.ok(!owners.has(m5.instanceId));
    assert.ok(!owners.has(t3.instanceId));
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
