import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AgentConfig, agentConfigFromEnv } from './agent-config.ts';
import { UNHONOURED_UPSTREAM_VARIABLES } from './settings.ts';

function parse(env: Record<string, string>): AgentConfig {
  return agentConfigFromEnv(env, { hostname: () => 'host-1' });
}
const API = { VPCNET_KUBE_API: 'http://127.0.0.1:6443' };

test("POD_MTU and AWS_VPC_ENI_MTU as upstream: the pod's MTU is the ENI MTU unless POD_MTU sets its own", () => {
  assert.deepEqual(parse({}).podNetwork.mtu, { eni: 9001, pod: 9001 });
  assert.deepEqual(parse({ AWS_VPC_ENI_MTU: '1500' }).podNetwork.mtu, { eni: 1500, pod: 1500 });
  assert.deepEqual(parse({ POD_MTU: '1400' }).podNetwork.mtu, { eni: 9001, pod: 1400 });
  assert.deepEqual(parse({ AWS_VPC_ENI_MTU: '8000', POD_MTU: '1400' }).podNetwork.mtu, {
    eni: 8000,
    pod: 1400,
  });
  assert.throws(
    () => parse({ POD_MTU: '575' }),
    /^ConfigError: POD_MTU must be an integer between 576 and 9001, got '575'$/,
  );
  assert.throws(
    () => parse({ AWS_VPC_ENI_MTU: '9002' }),
    /AWS_VPC_ENI_MTU must be an integer between 576 and 9001/,
  );
});

test("VPCNET_MTU, vpcnet's older name for both MTUs, is refused together with either upstream name", () => {
  assert.deepEqual(parse({ VPCNET_MTU: '1500' }).podNetwork.mtu, { eni: 1500, pod: 1500 });
  assert.throws(
    () => parse({ VPCNET_MTU: '1500', POD_MTU: '1400' }),
    /VPCNET_MTU .* cannot be combined with POD_MTU: set AWS_VPC_ENI_MTU \(ENI links\) and POD_MTU \(pods\) instead/,
  );
  assert.throws(
    () => parse({ VPCNET_MTU: '1500', AWS_VPC_ENI_MTU: '1500' }),
    /cannot be combined with AWS_VPC_ENI_MTU/,
  );
});

test('IPv6 pods (and IPv6 egress) need a pod MTU of at least 1280, naming the variable that gave it', () => {
  const ipv6 = { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' };
  assert.throws(
    () => parse({ ...ipv6, AWS_VPC_ENI_MTU: '1000' }),
    /ENABLE_IPv6=true needs a pod MTU of at least 1280 .* AWS_VPC_ENI_MTU gives 1000/,
  );
  assert.throws(
    () => parse({ ENABLE_V6_EGRESS: 'true', POD_MTU: '1279' }),
    /ENABLE_V6_EGRESS=true .* POD_MTU gives 1279/,
  );
  assert.equal(parse({ ...ipv6, POD_MTU: '1280' }).podNetwork.mtu.pod, 1280);
  assert.equal(parse({ POD_MTU: '576' }).podNetwork.mtu.pod, 576);
});

test('ANNOTATE_POD_IP is off by default and needs the Kubernetes API', () => {
  assert.equal(parse({}).podNetwork.annotatePodIp, false);
  assert.equal(parse({ ...API, ANNOTATE_POD_IP: 'true' }).podNetwork.annotatePodIp, true);
  assert.throws(() => parse({ ANNOTATE_POD_IP: 'true' }), /ANNOTATE_POD_IP=true needs the Kubernetes API/);
  assert.throws(
    () => parse({ ...API, ANNOTATE_POD_IP: 'yes' }),
    /ANNOTATE_POD_IP must be true or false, got 'yes'/,
  );
});

test('AWS_EXTERNAL_SERVICE_CIDRS is a list of IPv4 CIDRs, each checked, written as its block', () => {
  assert.deepEqual(parse({}).podNetwork.externalServiceCidrs, []);
  assert.deepEqual(
    parse({ AWS_EXTERNAL_SERVICE_CIDRS: '198.51.100.7/24, 203.0.113.9/32,' }).podNetwork.externalServiceCidrs,
    ['198.51.100.0/24', '203.0.113.9/32'],
  );
  assert.throws(
    () => parse({ AWS_EXTERNAL_SERVICE_CIDRS: '198.51.100.0/24,2001:db8::/64' }),
    /AWS_EXTERNAL_SERVICE_CIDRS: '2001:db8::\/64' is not an IPv4 CIDR/,
  );
});

test('DISABLE_POD_V6 and DISABLE_TCP_EARLY_DEMUX are parsed strictly; IPv6 off in pods contradicts IPv6 mode and IPv6 egress', () => {
  const c = parse({ DISABLE_POD_V6: 'true', DISABLE_TCP_EARLY_DEMUX: 'true' }).podNetwork;
  assert.equal(c.disablePodV6, true);
  assert.equal(c.disableTcpEarlyDemux, true);
  assert.throws(
    () => parse({ DISABLE_TCP_EARLY_DEMUX: '1' }),
    /DISABLE_TCP_EARLY_DEMUX must be true or false/,
  );
  assert.throws(
    () => parse({ DISABLE_POD_V6: 'true', ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' }),
    /DISABLE_POD_V6=true with ENABLE_IPv6=true/,
  );
  assert.throws(
    () => parse({ DISABLE_POD_V6: 'true', ENABLE_V6_EGRESS: 'true' }),
    /DISABLE_POD_V6=true with ENABLE_V6_EGRESS=true/,
  );
});

test('ENABLE_V6_EGRESS is an IPv4-mode switch: off by default, and without effect in IPv6 mode', () => {
  assert.equal(parse({}).podNetwork.v6Egress, false);
  assert.equal(parse({ ENABLE_V6_EGRESS: 'true' }).podNetwork.v6Egress, true);
  const ipv6 = { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' };
  assert.equal(parse({ ...ipv6, ENABLE_V6_EGRESS: 'true' }).podNetwork.v6Egress, false);
});

test('the pod network knobs are honoured, no longer listed as set-but-without-effect', () => {
  for (const name of [
    'POD_MTU',
    'AWS_VPC_ENI_MTU',
    'ANNOTATE_POD_IP',
    'DISABLE_TCP_EARLY_DEMUX',
    'AWS_EXTERNAL_SERVICE_CIDRS',
    'DISABLE_POD_V6',
    'ENABLE_V6_EGRESS',
  ])
    assert.equal(UNHONOURED_UPSTREAM_VARIABLES[name], undefined, name);
});
