// Upstream's knobs of what the agent may ask of the cloud and which ENIs it manages, as the
// environment parser reads them: defaults as upstream's, what each implies, and the combinations
// refused at start with the reason.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AgentConfig, agentConfigFromEnv } from './agent-config.ts';
import { ConfigError } from './config-error.ts';
import { DOCUMENTED_VARIABLES } from './settings.ts';

function parse(env: Record<string, string>): AgentConfig {
  return agentConfigFromEnv({ VPCNET_NODE_NAME: 'n1', ...env }, { hostname: () => 'host-1' });
}

test("upstream's defaults: provisioning on, EC2 used, untagged ENIs managed, cordoned nodes held", () => {
  const c = parse({});
  assert.deepEqual(c.cloudAccess, {
    provisioning: true,
    imdsOnly: false,
    imdsStaleSeconds: 30,
    ec2MetadataDisabled: false,
  });
  assert.deepEqual(c.eniManagement, { manageUntagged: true, onUnschedulableNode: false });
  assert.equal(c.leakedEniCleanup.enabled, true);
});

test('DISABLE_NETWORK_RESOURCE_PROVISIONING turns provisioning and the leaked-ENI sweep off, EC2 reads stay', () => {
  const c = parse({ DISABLE_NETWORK_RESOURCE_PROVISIONING: 'true' });
  assert.equal(c.cloudAccess.provisioning, false);
  assert.equal(c.cloudAccess.imdsOnly, false);
  assert.equal(c.leakedEniCleanup.enabled, false);
});

test('ENABLE_IMDS_ONLY_MODE implies no provisioning, with its own stale window', () => {
  const c = parse({ ENABLE_IMDS_ONLY_MODE: 'true', VPCNET_IMDS_STALE_SECONDS: '5' });
  assert.deepEqual(c.cloudAccess, {
    provisioning: false,
    imdsOnly: true,
    imdsStaleSeconds: 5,
    ec2MetadataDisabled: false,
  });
  assert.equal(c.leakedEniCleanup.enabled, false);
  assert.throws(
    () => parse({ VPCNET_IMDS_STALE_SECONDS: '0' }),
    /VPCNET_IMDS_STALE_SECONDS must be a positive integer/,
  );
});

test('IMDS-only mode is refused with what needs EC2, naming why', () => {
  const refused = (env: Record<string, string>, why: RegExp) =>
    assert.throws(
      () => parse({ ENABLE_IMDS_ONLY_MODE: 'true', ...env }),
      (err: unknown) => err instanceof ConfigError && why.test(err.message),
    );
  refused(
    { ENABLE_POD_ENI: 'true' },
    /^ENABLE_IMDS_ONLY_MODE=true with ENABLE_POD_ENI=true: .*checked against EC2/,
  );
  refused(
    { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' },
    /with ENABLE_IPv6=true: the node's IPv6 \/80 is read from, and assigned through, EC2/,
  );
  refused({ MANAGE_UNTAGGED_ENI: 'false' }, /with MANAGE_UNTAGGED_ENI=false: ENI tags are read from EC2/);
  refused({ AWS_EC2_METADATA_DISABLED: 'true' }, /with AWS_EC2_METADATA_DISABLED=true/);
});

test('the ENI management knobs and AWS_EC2_METADATA_DISABLED are read with their meanings', () => {
  const c = parse({
    MANAGE_UNTAGGED_ENI: 'false',
    AWS_MANAGE_ENIS_NON_SCHEDULABLE: 'true',
    AWS_EC2_METADATA_DISABLED: 'TRUE',
  });
  assert.deepEqual(c.eniManagement, { manageUntagged: false, onUnschedulableNode: true });
  assert.equal(c.cloudAccess.ec2MetadataDisabled, true, 'any case, as the SDKs read it');
  assert.equal(parse({ AWS_EC2_METADATA_DISABLED: 'False' }).cloudAccess.ec2MetadataDisabled, false);
  assert.throws(
    () => parse({ AWS_EC2_METADATA_DISABLED: 'yes' }),
    /AWS_EC2_METADATA_DISABLED must be true or false, got 'yes'/,
  );
  assert.throws(() => parse({ MANAGE_UNTAGGED_ENI: 'no' }), /MANAGE_UNTAGGED_ENI must be true or false/);
});

test('each knob is documented (README table, --help) with the upstream mark where it is upstream’s', () => {
  const documented = new Map(DOCUMENTED_VARIABLES.map((v) => [v.env, v.upstream]));
  for (const name of [
    'ENABLE_IMDS_ONLY_MODE',
    'DISABLE_NETWORK_RESOURCE_PROVISIONING',
    'MANAGE_UNTAGGED_ENI',
    'AWS_MANAGE_ENIS_NON_SCHEDULABLE',
    'AWS_EC2_METADATA_DISABLED',
    'AWS_EC2_ENDPOINT',
    'AWS_PROFILE',
    'AWS_SHARED_CREDENTIALS_FILE',
    'AWS_CONFIG_FILE',
  ])
    assert.equal(documented.get(name), true, name);
  assert.equal(documented.get('VPCNET_IMDS_STALE_SECONDS'), false);
});
