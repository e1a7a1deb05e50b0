import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentConfigFromEnv, ConfigError } from './config.ts';

test('defaults follow the documented paths', () => {
  const c = agentConfigFromEnv({ VPCNET_NODE_NAME: 'n1' });
  assert.equal(c.agentSocket, '/run/vpcnet/agent.sock');
  assert.equal(c.stateDir, '/var/lib/vpcnet');
  assert.equal(c.delSpoolDir, '/var/lib/vpcnet/del-spool');
  assert.equal(c.mtu, 9001);
  assert.equal(c.kubeApi, undefined);
});

test('the spool dir is the plugin default unless set, whatever the state dir', () => {
  assert.equal(agentConfigFromEnv({ VPCNET_STATE_DIR: '/s' }).delSpoolDir, '/var/lib/vpcnet/del-spool');
  assert.equal(agentConfigFromEnv({ VPCNET_STATE_DIR: '/s', VPCNET_DEL_SPOOL_DIR: '/q' }).delSpoolDir, '/q');
});

test('in-cluster API from KUBERNETES_SERVICE_HOST, explicit URL wins', () => {
  assert.equal(
    agentConfigFromEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }).kubeApi?.baseUrl,
    'https://10.96.0.1:443',
  );
  assert.equal(
    agentConfigFromEnv({ KUBERNETES_SERVICE_HOST: '10.96.0.1', VPCNET_KUBE_API: 'http://10.0.255.254:6443/' })
      .kubeApi?.baseUrl,
    'http://10.0.255.254:6443',
  );
});

test('invalid values are refused with the variable named', () => {
  assert.throws(
    () => agentConfigFromEnv({ VPCNET_MTU: 'big' }),
    (e: unknown) => e instanceof ConfigError && /VPCNET_MTU/.test(e.message),
  );
  assert.throws(() => agentConfigFromEnv({ VPCNET_MTU: '100' }), /between 576 and 9001/);
  assert.throws(() => agentConfigFromEnv({ VPCNET_VETH_PREFIX: 'toolongprefix' }), /VPCNET_VETH_PREFIX/);
  assert.throws(() => agentConfigFromEnv({ VPCNET_KUBE_API: 'ftp://x' }), /VPCNET_KUBE_API/);
});

test('the reconcile interval defaults to 30 s, 0 turns the loop off, and junk is refused', () => {
  assert.equal(agentConfigFromEnv({}).reconcileSeconds, 30);
  assert.equal(agentConfigFromEnv({ VPCNET_RECONCILE_SECONDS: '0' }).reconcileSeconds, 0);
  assert.equal(agentConfigFromEnv({ VPCNET_RECONCILE_SECONDS: '5' }).reconcileSeconds, 5);
  assert.throws(() => agentConfigFromEnv({ VPCNET_RECONCILE_SECONDS: '-1' }), /VPCNET_RECONCILE_SECONDS/);
  assert.throws(() => agentConfigFromEnv({ VPCNET_RECONCILE_SECONDS: '1.5' }), /VPCNET_RECONCILE_SECONDS/);
});

test('upstream switches vpcnet cannot honour yet are refused or parsed, never ignored', () => {
  assert.throws(() => agentConfigFromEnv({ ENABLE_PREFIX_DELEGATION: 'true' }), /ENABLE_PREFIX_DELEGATION/);
  assert.equal(agentConfigFromEnv({ ENABLE_PREFIX_DELEGATION: 'false' }).enablePodEni, false);
  assert.equal(agentConfigFromEnv({ ENABLE_POD_ENI: 'true' }).enablePodEni, true);
  assert.throws(() => agentConfigFromEnv({ ENABLE_POD_ENI: 'yes' }), /ENABLE_POD_ENI must be true or false/);
});
