// The agent's reader of the node's ENIConfig against the emulator's Kubernetes slice: chosen by
// the node's zone label, read again on each call, and a missing one named.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SUBNET_A, startTestEmulator, type TestEmulator } from '../emulator/testing/test-emulator.ts';
import { ENI_CONFIG_API, EniConfigError, kubeEniConfigs } from './eni-config.ts';

let t: TestEmulator;
before(async () => {
  t = await startTestEmulator();
});
after(() => t.close());

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

test("the agent's reader finds the node's ENIConfig by its zone label, and names a missing one", async () => {
  await t.emulator.launchInstance({
    instanceType: 'm5.large',
    subnetId: SUBNET_A,
    nodeName: 'node-eni-config',
  });
  const keys = { labelKey: 'topology.kubernetes.io/zone', annotationKey: 'k8s.amazonaws.com/eniConfig' };
  const reader = kubeEniConfigs({ baseUrl: t.url }, 'node-eni-config', keys);
  await api('POST', ENI_CONFIG_API, {
    metadata: { name: 'us-west-2a' },
    spec: { subnet: 'subnet-pods', securityGroups: ['sg-pods'] },
  });
  const found = await reader.current();
  assert.deepEqual(found, {
    name: 'us-west-2a',
    chosenBy: 'node label topology.kubernetes.io/zone',
    subnetId: 'subnet-pods',
    securityGroupIds: ['sg-pods'],
  });
  await api('DELETE', `${ENI_CONFIG_API}/us-west-2a`);
  await assert.rejects(
    reader.current(),
    (err: unknown) =>
      err instanceof EniConfigError &&
      err.message === 'ENIConfig us-west-2a (node label topology.kubernetes.io/zone) does not exist',
  );
});
