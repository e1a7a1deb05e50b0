import assert from 'node:assert/strict';
import { test } from 'node:test';
import { labLayout } from '../layout.ts';
import { agentEnv } from './agents.ts';

test("a lab agent gets the caller's vpcnet settings, upstream's AWS_* ones included, but nothing that reaches real AWS or a cluster", () => {
  const layout = labLayout('t1', 1);
  const node = layout.nodes[0]!;
  const set = {
    AWS_VPC_ENI_MTU: '8000',
    AWS_EXTERNAL_SERVICE_CIDRS: '198.51.100.0/24',
    AWS_VPC_K8S_CNI_EXTERNALSNAT: 'true',
    AWS_PROFILE: 'prod',
    AWS_SESSION_TOKEN: 'secret',
    KUBERNETES_SERVICE_HOST: '10.96.0.1',
    POD_MTU: '1400',
  };
  const saved = Object.fromEntries(Object.keys(set).map((k) => [k, process.env[k]]));
  Object.assign(process.env, set);
  try {
    const env = agentEnv(layout, node, undefined);
    assert.equal(env.AWS_VPC_ENI_MTU, '8000');
    assert.equal(env.AWS_EXTERNAL_SERVICE_CIDRS, '198.51.100.0/24');
    assert.equal(env.AWS_VPC_K8S_CNI_EXTERNALSNAT, 'true');
    assert.equal(env.POD_MTU, '1400');
    assert.equal(env.AWS_PROFILE, undefined);
    assert.equal(env.AWS_SESSION_TOKEN, undefined);
    assert.equal(env.KUBERNETES_SERVICE_HOST, undefined);
    assert.equal(env.VPCNET_KUBE_API, layout.emulator.kubeEndpoint);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});
