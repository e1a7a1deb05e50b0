// ENIConfig objects of the Kubernetes slice (crd.k8s.amazonaws.com/v1alpha1, cluster-scoped):
// create, get, list and delete (src/pods/eni-config.emulator.test.ts: the agent's reader of them).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestEmulator, type TestEmulator } from '../testing/test-emulator.ts';

const ENI_CONFIG_API = '/apis/crd.k8s.amazonaws.com/v1alpha1/eniconfigs';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

function api(method: string, path: string, body?: unknown) {
  return t.kube(method, path, body);
}

const eniConfig = (name: string, subnet: string, securityGroups?: string[]) => ({
  apiVersion: 'crd.k8s.amazonaws.com/v1alpha1',
  kind: 'ENIConfig',
  metadata: { name },
  spec: { subnet, ...(securityGroups === undefined ? {} : { securityGroups }) },
});

test('ENIConfigs are created, read, listed and deleted with their group/version', async () => {
  const created = await api('POST', ENI_CONFIG_API, eniConfig('us-west-2a', 'subnet-pods', ['sg-pods']));
  assert.equal(created.status, 201);
  assert.equal(created.json.apiVersion, 'crd.k8s.amazonaws.com/v1alpha1');
  const got = await api('GET', `${ENI_CONFIG_API}/us-west-2a`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.json.spec, { subnet: 'subnet-pods', securityGroups: ['sg-pods'] });
  await api('POST', ENI_CONFIG_API, eniConfig('other', 'subnet-x'));
  const list = await api('GET', ENI_CONFIG_API);
  assert.equal(list.json.kind, 'ENIConfigList');
  assert.deepEqual((list.json.items as { metadata: { name: string } }[]).map((i) => i.metadata.name).sort(), [
    'other',
    'us-west-2a',
  ]);
  assert.equal((await api('DELETE', `${ENI_CONFIG_API}/other`)).status, 200);
  assert.equal((await api('GET', `${ENI_CONFIG_API}/other`)).status, 404);
});
