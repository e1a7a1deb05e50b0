import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AGENT_SETTINGS, DOCUMENTED_VARIABLES } from './settings.ts';
import { CLOUD_DRIVER_VARIABLES } from './settings-ec2.ts';

test('every variable is declared once', () => {
  const names = DOCUMENTED_VARIABLES.map((v) => v.env);
  assert.deepEqual(
    names.filter((n, i) => names.indexOf(n) !== i),
    [],
  );
});

test('every default is itself a valid value of its setting', () => {
  for (const setting of Object.values(AGENT_SETTINGS)) {
    if (setting.fallback === undefined) continue;
    assert.equal(setting.kind.parse(String(setting.fallback)), setting.fallback, setting.env);
  }
});

test('the settings users switch over with keep the upstream names', () => {
  const upstream = DOCUMENTED_VARIABLES.filter((v) => v.upstream).map((v) => v.env);
  for (const name of [
    'WARM_ENI_TARGET',
    'WARM_IP_TARGET',
    'MINIMUM_IP_TARGET',
    'MAX_ENI',
    'IP_COOLDOWN_PERIOD',
    'ENABLE_POD_ENI',
    'ENABLE_PREFIX_DELEGATION',
    'WARM_PREFIX_TARGET',
    'POD_SECURITY_GROUP_ENFORCING_MODE',
    'AWS_VPC_K8S_CNI_EXTERNALSNAT',
  ]) {
    assert.ok(upstream.includes(name), name);
  }
});

test('the AWS endpoint and credential variables are documented as read by the cloud driver', () => {
  assert.deepEqual(
    CLOUD_DRIVER_VARIABLES.map((v) => v.env),
    [
      'AWS_ENDPOINT_URL_EC2',
      'AWS_EC2_ENDPOINT',
      'AWS_EC2_METADATA_SERVICE_ENDPOINT',
      'AWS_REGION',
      'AWS_PROFILE',
      'AWS_SHARED_CREDENTIALS_FILE',
      'AWS_CONFIG_FILE',
    ],
  );
  for (const v of CLOUD_DRIVER_VARIABLES) assert.match(v.description, /^read by the cloud driver/);
});
