// CNINode objects of the Kubernetes slice (vpcresources.k8s.aws/v1alpha1, cluster-scoped), answered
// as the API server answers them: create (409 AlreadyExists when the name is taken), get (404
// NotFound), merge patch and update (PUT) with the resourceVersion as a precondition (409 Conflict
// when the object changed since; an update of a custom resource must name one, 422), list, watch,
// delete (held by a finalizer until a write takes it off). src/agent/loops/cni-node.test.ts drives the agent's keeper of its CNINode against it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

const CNI_NODE_API = '/apis/vpcresources.k8s.aws/v1alpha1/cninodes';
const MERGE = 'application/merge-patch+json';

interface Answer {
  status: number;
  json: {
    kind?: string;
    apiVersion?: string;
    reason?: string;
    message?: string;
    metadata: { name: string; uid: string; resourceVersion: string; ownerReferences?: unknown };
    spec: { features?: { name: string; value?: string }[] };
    items?: { metadata: { name: string } }[];
  };
}

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

function api(method: string, path: string, body?: unknown, contentType?: string) {
  return t.kube<Answer['json']>(method, path, body, contentType);
}

function cniNode(name: string, features: { name: string; value?: string }[] = []) {
  return {
    apiVersion: 'vpcresources.k8s.aws/v1alpha1',
    kind: 'CNINode',
    metadata: { name, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: `uid-${name}` }] },
    spec: { features },
  };
}

test('a CNINode is created once with its group/version; a second create of the name is 409 AlreadyExists; a missing one is 404 NotFound', async () => {
  const created = await api('POST', CNI_NODE_API, cniNode('n1', [{ name: 'SecurityGroupsForPods' }]));
  assert.equal(created.status, 201);
  assert.equal(created.json.apiVersion, 'vpcresources.k8s.aws/v1alpha1');
  assert.equal(created.json.kind, 'CNINode');
  assert.match(created.json.metadata.resourceVersion, /^\d+$/);
  assert.deepEqual(created.json.metadata.ownerReferences, [
    { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'uid-n1' },
  ]);

  const again = await api('POST', CNI_NODE_API, cniNode('n1'));
  assert.equal(again.status, 409);
  assert.equal(again.json.kind, 'Status');
  assert.equal(again.json.reason, 'AlreadyExists');
  assert.equal(again.json.message, 'cninodes.vpcresources.k8s.aws "n1" already exists');
  const kept = await api('GET', `${CNI_NODE_API}/n1`);
  assert.deepEqual(kept.json.spec.features, [{ name: 'SecurityGroupsForPods' }], 'the first one is kept');

  const missing = await api('GET', `${CNI_NODE_API}/ghost`);
  assert.equal(missing.status, 404);
  assert.equal(missing.json.reason, 'NotFound');
  assert.equal(missing.json.message, 'cninodes.vpcresources.k8s.aws "ghost" not found');
  assert.equal((await api('PATCH', `${CNI_NODE_API}/ghost`, { spec: {} }, MERGE)).status, 404);
  assert.equal((await api('DELETE', `${CNI_NODE_API}/ghost`)).status, 404);
});

test('a merge patch carrying the resourceVersion it was read at applies once; carrying an older one it is 409 Conflict and changes nothing', async () => {
  const read = (await api('POST', CNI_NODE_API, cniNode('n2'))).json;
  const features = [{ name: 'SecurityGroupsForPods' }, { name: 'CustomNetworking', value: 'us-west-2a' }];
  const patched = await api(
    'PATCH',
    `${CNI_NODE_API}/n2`,
    { metadata: { resourceVersion: read.metadata.resourceVersion }, spec: { features } },
    MERGE,
  );
  assert.equal(patched.status, 200);
  assert.deepEqual(patched.json.spec.features, features);
  assert.equal(patched.json.metadata.uid, read.metadata.uid);
  assert.ok(Number(patched.json.metadata.resourceVersion) > Number(read.metadata.resourceVersion));

  const stale = await api(
    'PATCH',
    `${CNI_NODE_API}/n2`,
    { metadata: { resourceVersion: read.metadata.resourceVersion }, spec: { features: [] } },
    MERGE,
  );
  assert.equal(stale.status, 409);
  assert.equal(stale.json.reason, 'Conflict');
  assert.match(
    String(stale.json.message),
    /^Operation cannot be fulfilled on cninodes\.vpcresources\.k8s\.aws "n2": the object has been modified/,
  );
  assert.deepEqual((await api('GET', `${CNI_NODE_API}/n2`)).json.spec.features, features);

  // Without a resourceVersion a merge patch is unconditional, as the API server takes it.
  const blind = await api('PATCH', `${CNI_NODE_API}/n2`, { spec: { features: null } }, MERGE);
  assert.equal(blind.status, 200);
  assert.equal(blind.json.spec.features, undefined);
});

test('an update (PUT) must name the current resourceVersion and the URL name: else 422, 409 or 400, and a missing CNINode is 404', async () => {
  const read = (await api('POST', CNI_NODE_API, cniNode('n3'))).json;
  const withFeature = {
    ...read,
    spec: { features: [{ name: 'CustomNetworking', value: 'pods-a' }] },
  };
  const updated = await api('PUT', `${CNI_NODE_API}/n3`, withFeature);
  assert.equal(updated.status, 200);
  assert.deepEqual(updated.json.spec.features, [{ name: 'CustomNetworking', value: 'pods-a' }]);
  assert.equal(updated.json.metadata.uid, read.metadata.uid);

  const stale = await api('PUT', `${CNI_NODE_API}/n3`, { ...withFeature, spec: { features: [] } });
  assert.equal(stale.status, 409);
  assert.equal(stale.json.reason, 'Conflict');

  const { resourceVersion: _dropped, ...metaWithout } = updated.json.metadata;
  const unconditional = await api('PUT', `${CNI_NODE_API}/n3`, { ...updated.json, metadata: metaWithout });
  assert.equal(unconditional.status, 422);
  assert.equal(unconditional.json.reason, 'Invalid');
  assert.match(
    String(unconditional.json.message),
    /metadata\.resourceVersion: .*must be specified for an update/,
  );

  const renamed = await api('PUT', `${CNI_NODE_API}/n3`, {
    ...updated.json,
    metadata: { ...updated.json.metadata, name: 'other' },
  });
  assert.equal(renamed.status, 400);
  assert.match(String(renamed.json.message), /does not match the name on the URL/);

  const ghost = await api('PUT', `${CNI_NODE_API}/ghost`, {
    ...updated.json,
    metadata: { ...updated.json.metadata, name: 'ghost' },
  });
  assert.equal(ghost.status, 404);
  assert.deepEqual((await api('GET', `${CNI_NODE_API}/n3`)).json.spec.features, [
    { name: 'CustomNetworking', value: 'pods-a' },
  ]);
});

test('CNINodes are listed (CNINodeList, by field selector too), watched, and deleted', async () => {
  await api('POST', CNI_NODE_API, cniNode('n4'));
  const list = await api('GET', CNI_NODE_API);
  assert.equal(list.json.kind, 'CNINodeList');
  assert.ok(list.json.items?.some((i) => i.metadata.name === 'n4'));
  const one = await api('GET', `${CNI_NODE_API}?fieldSelector=${encodeURIComponent('metadata.name=n4')}`);
  assert.deepEqual(
    one.json.items?.map((i) => i.metadata.name),
    ['n4'],
  );

  const rv = (list.json.metadata as { resourceVersion: string }).resourceVersion;
  const watch = await fetch(
    `${t.url}${CNI_NODE_API}?watch=true&resourceVersion=${rv}&fieldSelector=${encodeURIComponent('metadata.name=n4')}`,
  );
  const deleted = await api('DELETE', `${CNI_NODE_API}/n4`);
  assert.equal(deleted.status, 200);
  assert.equal((await api('GET', `${CNI_NODE_API}/n4`)).status, 404);
  const reader = watch.body!.getReader();
  const { value } = await reader.read();
  await reader.cancel();
  const event = JSON.parse(new TextDecoder().decode(value).split('\n')[0]!) as Answer['json'] & {
    type: string;
    object: Answer['json'];
  };
  assert.deepEqual([event.type, event.object.metadata.name], ['DELETED', 'n4']);
  // A name freed by the delete can be created again, as a new object.
  const recreated = await api('POST', CNI_NODE_API, cniNode('n4'));
  assert.equal(recreated.status, 201);
});

test('a CNINode with a finalizer is only marked by DELETE (deletionTimestamp, still readable); the write that takes the finalizer off deletes it', async () => {
  const finalized = {
    ...cniNode('n5'),
    metadata: { name: 'n5', finalizers: ['networking.k8s.aws/resource-cleanup'] },
  };
  assert.equal((await api('POST', CNI_NODE_API, finalized)).status, 201);
  const marked = await api('DELETE', `${CNI_NODE_API}/n5`);
  assert.equal(marked.status, 200);
  const held = await api('GET', `${CNI_NODE_API}/n5`);
  assert.equal(held.status, 200);
  assert.match(
    String((held.json.metadata as { deletionTimestamp?: string }).deletionTimestamp),
    /^\d{4}-\d\d-\d\dT/,
  );
  // Not patchable away, as the API server keeps it.
  await api('PATCH', `${CNI_NODE_API}/n5`, { metadata: { deletionTimestamp: null } }, MERGE);
  assert.ok('deletionTimestamp' in (await api('GET', `${CNI_NODE_API}/n5`)).json.metadata);

  const released = await api('PATCH', `${CNI_NODE_API}/n5`, { metadata: { finalizers: null } }, MERGE);
  assert.equal(released.status, 200);
  assert.equal((await api('GET', `${CNI_NODE_API}/n5`)).status, 404);
});
