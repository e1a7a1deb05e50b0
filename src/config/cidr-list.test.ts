import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentConfigFromEnv } from './agent-config.ts';
import { parseCidrList } from './cidr-list.ts';

const host = { hostname: () => 'node-a' };

test('excluded SNAT CIDRs are read in order, written as their blocks, blanks ignored', () => {
  assert.deepEqual(parseCidrList('X', ' 198.51.100.0/24, ,203.0.113.7/24 '), [
    '198.51.100.0/24',
    '203.0.113.0/24',
  ]);
  assert.deepEqual(parseCidrList('X', ''), []);
});

test('a bad excluded CIDR stops the agent at start with an error naming it', () => {
  assert.throws(
    () => agentConfigFromEnv({ AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS: '198.51.100.0/24,10.0.0.0/40' }, host),
    {
      name: 'ConfigError',
      message: /AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS: '10\.0\.0\.0\/40' is not an IPv4 CIDR/,
    },
  );
});

test('SNAT choices default to no exclusions, prng ports and a 60 s VPC CIDR refresh', () => {
  assert.deepEqual(agentConfigFromEnv({}, host).snat, {
    excludeCidrs: [],
    randomize: 'prng',
    vpcCidrRefreshSeconds: 60,
  });
  const c = agentConfigFromEnv(
    {
      AWS_VPC_K8S_CNI_EXCLUDE_SNAT_CIDRS: '198.51.100.0/24',
      AWS_VPC_K8S_CNI_RANDOMIZESNAT: 'hashrandom',
      VPCNET_VPC_CIDR_REFRESH_SECONDS: '0',
    },
    host,
  );
  assert.deepEqual(c.snat, {
    excludeCidrs: ['198.51.100.0/24'],
    randomize: 'hashrandom',
    vpcCidrRefreshSeconds: 0,
  });
  assert.throws(
    () => agentConfigFromEnv({ AWS_VPC_K8S_CNI_RANDOMIZESNAT: 'random' }, host),
    /prng, hashrandom or none/,
  );
});
