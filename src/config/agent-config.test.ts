import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type AgentConfig, agentConfigFromEnv } from './agent-config.ts';
import { ConfigError } from './config-error.ts';
import {
  DOCUMENTED_VARIABLES,
  UNHONOURED_UPSTREAM_VARIABLES,
  unhonouredUpstreamVariables,
} from './settings.ts';

/** The parser with a fixed host name, so no test depends on the machine it runs on. */
function parse(env: Record<string, string>): AgentConfig {
  return agentConfigFromEnv(env, { hostname: () => 'host-1' });
}

test('defaults follow the documented paths', () => {
  const c = parse({ VPCNET_NODE_NAME: 'n1' });
  assert.equal(c.agentSocket, '/run/vpcnet/agent.sock');
  assert.equal(c.stateDir, '/var/lib/vpcnet');
  assert.equal(c.delSpoolDir, '/var/lib/vpcnet/del-spool');
  assert.deepEqual(c.podNetwork.mtu, { eni: 9001, pod: 9001 });
  assert.equal(c.kubeApi, undefined);
  assert.equal(c.nodeName, 'n1');
  assert.equal(c.vethPrefix, 'vpc');
  assert.equal(c.logLevel, 'info');
});

test('the node name defaults to the host name', () => {
  assert.equal(parse({}).nodeName, 'host-1');
  assert.equal(parse({ VPCNET_NODE_NAME: '' }).nodeName, 'host-1');
});

test("upstream's MY_NODE_NAME names the node too; VPCNET_NODE_NAME wins", () => {
  assert.equal(parse({ MY_NODE_NAME: 'ip-10-0-1-5' }).nodeName, 'ip-10-0-1-5');
  assert.equal(parse({ MY_NODE_NAME: 'a', VPCNET_NODE_NAME: 'b' }).nodeName, 'b');
});

test('the spool dir is the plugin default unless set, whatever the state dir', () => {
  assert.equal(parse({ VPCNET_STATE_DIR: '/s' }).delSpoolDir, '/var/lib/vpcnet/del-spool');
  assert.equal(parse({ VPCNET_STATE_DIR: '/s', VPCNET_DEL_SPOOL_DIR: '/q' }).delSpoolDir, '/q');
});

test('in-cluster API from KUBERNETES_SERVICE_HOST, explicit URL wins', () => {
  assert.equal(parse({ KUBERNETES_SERVICE_HOST: '10.96.0.1' }).kubeApi?.baseUrl, 'https://10.96.0.1:443');
  assert.equal(
    parse({ KUBERNETES_SERVICE_HOST: '10.96.0.1', VPCNET_KUBE_API: 'http://10.0.255.254:6443/' }).kubeApi
      ?.baseUrl,
    'http://10.0.255.254:6443',
  );
});

test('the in-cluster API authenticates as the service account, on the service port, IPv6 in brackets', () => {
  assert.deepEqual(parse({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }).kubeApi, {
    baseUrl: 'https://[fd00::1]:6443',
    caFile: '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
    token: '/var/run/secrets/kubernetes.io/serviceaccount/token',
  });
  assert.deepEqual(parse({ VPCNET_KUBE_API: 'https://api.example:443' }).kubeApi, {
    baseUrl: 'https://api.example:443',
  });
  assert.throws(
    () => parse({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: 'https' }),
    /KUBERNETES_SERVICE_PORT must be an integer between 1 and 65535, got 'https'/,
  );
});

test('invalid values are refused with the variable named', () => {
  assert.throws(
    () => parse({ VPCNET_MTU: 'big' }),
    (e: unknown) => e instanceof ConfigError && /VPCNET_MTU/.test(e.message),
  );
  assert.throws(() => parse({ VPCNET_MTU: '100' }), /between 576 and 9001/);
  assert.throws(() => parse({ VPCNET_MTU: '9002' }), /^ConfigError: VPCNET_MTU .* got '9002'$/);
  assert.deepEqual(parse({ VPCNET_MTU: '576' }).podNetwork.mtu, { eni: 576, pod: 576 });
  assert.throws(() => parse({ VPCNET_VETH_PREFIX: 'toolongprefix' }), /VPCNET_VETH_PREFIX/);
  assert.throws(
    () => parse({ VPCNET_VETH_PREFIX: '1ab' }),
    /VPCNET_VETH_PREFIX must be 1-4 lowercase letters\/digits starting with a letter, got '1ab'/,
  );
  assert.throws(() => parse({ VPCNET_KUBE_API: 'ftp://x' }), /VPCNET_KUBE_API/);
  assert.throws(
    () => parse({ VPCNET_LOG_LEVEL: 'verbose' }),
    /VPCNET_LOG_LEVEL must be debug, info, warn or error, got 'verbose'/,
  );
  assert.equal(parse({ VPCNET_LOG_LEVEL: 'debug' }).logLevel, 'debug');
});

test('an ADD waits 20 s for the pool by default; the wait must be positive', () => {
  assert.equal(parse({}).addWaitSeconds, 20);
  assert.equal(parse({ VPCNET_ADD_WAIT_SECONDS: '3' }).addWaitSeconds, 3);
  assert.throws(
    () => parse({ VPCNET_ADD_WAIT_SECONDS: '0' }),
    /VPCNET_ADD_WAIT_SECONDS must be a positive integer, got '0'/,
  );
});

test('the reconcile interval defaults to 10 s, 0 turns the loop off, and junk is refused', () => {
  assert.equal(parse({}).reconcileSeconds, 10);
  assert.equal(parse({ VPCNET_RECONCILE_SECONDS: '0' }).reconcileSeconds, 0);
  assert.equal(parse({ VPCNET_RECONCILE_SECONDS: '5' }).reconcileSeconds, 5);
  assert.throws(() => parse({ VPCNET_RECONCILE_SECONDS: '-1' }), /VPCNET_RECONCILE_SECONDS/);
  assert.throws(() => parse({ VPCNET_RECONCILE_SECONDS: '1.5' }), /VPCNET_RECONCILE_SECONDS/);
});

test('ENABLE_PREFIX_DELEGATION and WARM_PREFIX_TARGET: off by default, a target of 1, parsed strictly', () => {
  assert.deepEqual(parse({}).prefixMode, { enabled: false, warmPrefixTarget: 1 });
  assert.deepEqual(parse({ ENABLE_PREFIX_DELEGATION: 'true', WARM_PREFIX_TARGET: '2' }).prefixMode, {
    enabled: true,
    warmPrefixTarget: 2,
  });
  assert.throws(() => parse({ ENABLE_PREFIX_DELEGATION: 'yes' }), /ENABLE_PREFIX_DELEGATION/);
  assert.throws(() => parse({ WARM_PREFIX_TARGET: '-1' }), /WARM_PREFIX_TARGET/);
});

test('prefix mode with no warm target at all is refused, as upstream does not support it', () => {
  assert.throws(
    () => parse({ ENABLE_PREFIX_DELEGATION: 'true', WARM_PREFIX_TARGET: '0' }),
    (e: unknown) => e instanceof ConfigError && /WARM_PREFIX_TARGET=0/.test(e.message),
  );
  const ipTargets = parse({ ENABLE_PREFIX_DELEGATION: 'true', WARM_PREFIX_TARGET: '0', WARM_IP_TARGET: '4' });
  assert.equal(ipTargets.prefixMode.warmPrefixTarget, 0);
  assert.equal(parse({ WARM_PREFIX_TARGET: '0' }).prefixMode.enabled, false);
});

test('upstream switches vpcnet cannot honour yet are refused or parsed, never ignored', () => {
  assert.equal(parse({ ENABLE_POD_ENI: 'true' }).enablePodEni, true);
  assert.throws(() => parse({ ENABLE_POD_ENI: 'yes' }), /ENABLE_POD_ENI must be true or false/);
});

test('pods with security groups are enforced strictly by default, as upstream', () => {
  assert.equal(parse({}).podSecurityGroupEnforcingMode, 'strict');
  assert.equal(
    parse({ POD_SECURITY_GROUP_ENFORCING_MODE: 'standard' }).podSecurityGroupEnforcingMode,
    'standard',
  );
  assert.throws(
    () => parse({ POD_SECURITY_GROUP_ENFORCING_MODE: 'Strict' }),
    /^ConfigError: POD_SECURITY_GROUP_ENFORCING_MODE must be strict or standard, got 'Strict'$/,
  );
});

test('branch ENIs are reached through VLAN devices unless the macvlan driver is chosen', () => {
  assert.equal(parse({}).trunkDriver, 'vlan');
  assert.equal(parse({ VPCNET_TRUNK_DRIVER: 'macvlan' }).trunkDriver, 'macvlan');
  assert.throws(
    () => parse({ VPCNET_TRUNK_DRIVER: 'ipvlan' }),
    /VPCNET_TRUNK_DRIVER must be vlan or macvlan/,
  );
});

test('the node translates pod traffic leaving the VPC unless external SNAT is on', () => {
  assert.equal(parse({}).externalSnat, false);
  assert.equal(parse({ AWS_VPC_K8S_CNI_EXTERNALSNAT: 'true' }).externalSnat, true);
  assert.throws(
    () => parse({ AWS_VPC_K8S_CNI_EXTERNALSNAT: '1' }),
    /AWS_VPC_K8S_CNI_EXTERNALSNAT must be true or false/,
  );
});

describe('warm pool targets', () => {
  test('defaults: one warm ENI, 30 s cooldown, no IP targets or ENI cap', () => {
    assert.deepEqual(parse({}).targets, { warmEniTarget: 1, cooldownSeconds: 30 });
  });

  test('reads every variable', () => {
    assert.deepEqual(
      parse({
        WARM_ENI_TARGET: '0',
        WARM_IP_TARGET: '2',
        MINIMUM_IP_TARGET: ' 10 ',
        MAX_ENI: '2',
        IP_COOLDOWN_PERIOD: '5',
      }).targets,
      { warmEniTarget: 0, warmIpTarget: 2, minimumIpTarget: 10, maxEni: 2, cooldownSeconds: 5 },
    );
  });

  test('an empty value counts as unset', () => {
    assert.deepEqual(parse({ WARM_IP_TARGET: '' }).targets, { warmEniTarget: 1, cooldownSeconds: 30 });
    assert.deepEqual(parse({ MAX_ENI: '  ' }).targets, { warmEniTarget: 1, cooldownSeconds: 30 });
  });

  test('invalid values are refused with the variable and value named', () => {
    assert.throws(
      () => parse({ WARM_IP_TARGET: 'abc' }),
      /^ConfigError: WARM_IP_TARGET must be a non-negative integer, got 'abc'$/,
    );
    assert.throws(() => parse({ WARM_ENI_TARGET: '-1' }), /WARM_ENI_TARGET .* got '-1'/);
    assert.throws(() => parse({ MINIMUM_IP_TARGET: '1.5' }), /MINIMUM_IP_TARGET/);
    assert.throws(() => parse({ MAX_ENI: '0' }), /MAX_ENI must be a positive integer, got '0'/);
    assert.throws(() => parse({ IP_COOLDOWN_PERIOD: '30s' }), /IP_COOLDOWN_PERIOD/);
  });
});

test("the agent's EC2 ceiling: 10 calls/s, a burst of 20, 5 attempts unless set", () => {
  assert.deepEqual(parse({}).ec2, { qps: 10, burst: 20, maxAttempts: 5 });
  assert.deepEqual(
    parse({ VPCNET_EC2_QPS: '2.5', VPCNET_EC2_BURST: '40', VPCNET_EC2_MAX_ATTEMPTS: '1' }).ec2,
    { qps: 2.5, burst: 40, maxAttempts: 1 },
  );
  assert.throws(() => parse({ VPCNET_EC2_QPS: '0' }), /VPCNET_EC2_QPS must be a positive number, got '0'/);
  assert.throws(() => parse({ VPCNET_EC2_BURST: '0.5' }), /VPCNET_EC2_BURST must be a positive integer/);
  assert.throws(
    () => parse({ VPCNET_EC2_MAX_ATTEMPTS: '0' }),
    /VPCNET_EC2_MAX_ATTEMPTS must be an integer between 1 and 20/,
  );
});

test('CLUSTER_NAME and ADDITIONAL_ENI_TAGS become the tags of the ENIs vpcnet creates', () => {
  assert.deepEqual(parse({}).eniTags, {});
  assert.deepEqual(
    parse({ CLUSTER_NAME: 'prod', ADDITIONAL_ENI_TAGS: '{"team":"net","cost":"42"}' }).eniTags,
    {
      clusterName: 'prod',
      additionalTags: { team: 'net', cost: '42' },
    },
  );
});

test('an invalid ADDITIONAL_ENI_TAGS is refused at start with the variable and the fault named', () => {
  const refused: [string, RegExp][] = [
    ['{"team":', /not valid JSON/],
    ['["team"]', /expected a JSON object/],
    ['{"team":42}', /value of tag "team" must be a string/],
    ['{"node.k8s.amazonaws.com/x":"y"}', /contains the reserved "k8s\.amazonaws\.com"/],
    ['{"aws:cloudformation":"y"}', /starts with "aws:"/],
    ['{"vpcnet.io/created-by":"me"}', /one vpcnet sets itself/],
    [`{"${'k'.repeat(129)}":"v"}`, /1 to 128 characters/],
  ];
  for (const [value, fault] of refused) {
    assert.throws(
      () => parse({ ADDITIONAL_ENI_TAGS: value }),
      (e: unknown) =>
        e instanceof ConfigError && /^ADDITIONAL_ENI_TAGS: /.test(e.message) && fault.test(e.message),
      value,
    );
  }
  const tooMany = JSON.stringify(Object.fromEntries(Array.from({ length: 47 }, (_, i) => [`k${i}`, 'v'])));
  assert.throws(() => parse({ ADDITIONAL_ENI_TAGS: tooMany }), /at most 46 tags/);
});

test('the leaked-ENI sweep is on by default with the upstream grace (5 min) and interval (1 h); DISABLE_LEAKED_ENI_CLEANUP turns it off', () => {
  assert.deepEqual(parse({}).leakedEniCleanup, { enabled: true, graceMs: 300_000, intervalMs: 3_600_000 });
  assert.equal(parse({ DISABLE_LEAKED_ENI_CLEANUP: 'true' }).leakedEniCleanup.enabled, false);
  assert.deepEqual(
    parse({ VPCNET_LEAKED_ENI_GRACE_SECONDS: '60', VPCNET_LEAKED_ENI_SWEEP_SECONDS: '30' }).leakedEniCleanup,
    { enabled: true, graceMs: 60_000, intervalMs: 30_000 },
  );
  assert.throws(
    () => parse({ DISABLE_LEAKED_ENI_CLEANUP: 'yes' }),
    /DISABLE_LEAKED_ENI_CLEANUP must be true or false/,
  );
});

test('metrics on port 61678 and introspection on 127.0.0.1:61679 unless the upstream switches turn them off', () => {
  const c = parse({});
  assert.equal(c.metricsPort, 61678);
  assert.deepEqual(c.introspection, { host: '127.0.0.1', port: 61679 });
  assert.equal(parse({ VPCNET_METRICS_PORT: '9100' }).metricsPort, 9100);
  assert.equal(parse({ DISABLE_METRICS: 'true' }).metricsPort, undefined);
  assert.equal(parse({ DISABLE_INTROSPECTION: 'true' }).introspection, undefined);
  assert.deepEqual(parse({ INTROSPECTION_BIND_ADDRESS: '[::1]:7000' }).introspection, {
    host: '::1',
    port: 7000,
  });
});

test('introspection is refused on anything but loopback: it shows the whole node without authentication', () => {
  assert.throws(() => parse({ INTROSPECTION_BIND_ADDRESS: '0.0.0.0:61679' }), /INTROSPECTION_BIND_ADDRESS/);
  assert.throws(() => parse({ INTROSPECTION_BIND_ADDRESS: '127.0.0.1:70000' }), /above 65535/);
});

test('the startup taint defaults to node.vpcnet.io/agent-not-ready and must be a taint key', () => {
  assert.equal(parse({}).startupTaint, 'node.vpcnet.io/agent-not-ready');
  assert.equal(
    parse({ VPCNET_STARTUP_TAINT: 'example.com/cni-not-ready' }).startupTaint,
    'example.com/cni-not-ready',
  );
  assert.throws(() => parse({ VPCNET_STARTUP_TAINT: 'bad key!' }), /VPCNET_STARTUP_TAINT/);
});

test('new ENIs go by subnet discovery by default, as upstream; custom networking wins and needs the API', () => {
  assert.deepEqual(parse({}).eniPlacement, { mode: 'discovery' });
  assert.deepEqual(parse({ ENABLE_SUBNET_DISCOVERY: 'false' }).eniPlacement, { mode: 'primary' });
  assert.deepEqual(
    parse({ AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: 'true', VPCNET_KUBE_API: 'http://127.0.0.1:1' }).eniPlacement,
    { mode: 'custom', labelKey: 'k8s.amazonaws.com/eniConfig', annotationKey: 'k8s.amazonaws.com/eniConfig' },
  );
  assert.deepEqual(
    parse({
      AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: 'true',
      ENABLE_SUBNET_DISCOVERY: 'true',
      ENI_CONFIG_LABEL_DEF: 'topology.kubernetes.io/zone',
      VPCNET_KUBE_API: 'http://127.0.0.1:1',
    }).eniPlacement,
    { mode: 'custom', labelKey: 'topology.kubernetes.io/zone', annotationKey: 'k8s.amazonaws.com/eniConfig' },
  );
  assert.throws(
    () => parse({ AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: 'true' }),
    /AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG=true needs the Kubernetes API/,
  );
  assert.throws(
    () => parse({ ENABLE_SUBNET_DISCOVERY: 'yes' }),
    /ENABLE_SUBNET_DISCOVERY must be true or false/,
  );
});

test('ENABLE_IPv6=true needs prefix delegation, as upstream; ENABLE_V4_EGRESS defaults to true', () => {
  assert.throws(() => parse({ ENABLE_IPv6: 'true' }), /ENABLE_IPv6=true needs ENABLE_PREFIX_DELEGATION=true/);
  assert.deepEqual(parse({ ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' }).ipv6, {
    enabled: true,
    v4Egress: true,
  });
  assert.deepEqual(parse({ ENABLE_IPv6: 'false', ENABLE_V4_EGRESS: 'false' }).ipv6, {
    enabled: false,
    v4Egress: false,
  });
  assert.throws(() => parse({ ENABLE_V4_EGRESS: 'maybe' }), /ENABLE_V4_EGRESS must be true or false/);
  const v6 = { ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' };
  assert.throws(
    () => parse({ ...v6, ENABLE_POD_ENI: 'true' }),
    /branch ENIs for IPv6 pods are not built yet/,
  );
  assert.throws(
    () => parse({ ...v6, AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG: 'true', VPCNET_KUBE_API: 'http://127.0.0.1:1' }),
    /an ENIConfig's subnet would never be used/,
  );
});

test('NodePort support is on with mark 0x80 by default, as upstream; CONNMARK reads hex or decimal', () => {
  assert.deepEqual(parse({}).nodePort, { enabled: true, mark: 0x80 });
  assert.deepEqual(
    parse({ AWS_VPC_CNI_NODE_PORT_SUPPORT: 'false', AWS_VPC_K8S_CNI_CONNMARK: '0x4000' }).nodePort,
    {
      enabled: false,
      mark: 0x4000,
    },
  );
  assert.equal(parse({ AWS_VPC_K8S_CNI_CONNMARK: '128' }).nodePort.mark, 0x80);
  assert.throws(() => parse({ AWS_VPC_K8S_CNI_CONNMARK: '0' }), /AWS_VPC_K8S_CNI_CONNMARK/);
  assert.throws(() => parse({ AWS_VPC_K8S_CNI_CONNMARK: '0x1ffffffff' }), /AWS_VPC_K8S_CNI_CONNMARK/);
});

test('aws-node variables vpcnet does not honour are named with their reason when set, and only then', () => {
  assert.deepEqual(unhonouredUpstreamVariables({}), []);
  const found = unhonouredUpstreamVariables({ AWS_VPC_K8S_CNI_LOGLEVEL: 'DEBUG', WARM_IP_TARGET: '5' });
  assert.deepEqual(
    found.map((f) => f.variable),
    ['AWS_VPC_K8S_CNI_LOGLEVEL'],
  );
  assert.match(found[0]!.reason, /VPCNET_LOG_LEVEL/);
  // None of them is also a setting the agent parses.
  for (const name of Object.keys(UNHONOURED_UPSTREAM_VARIABLES))
    assert.ok(!DOCUMENTED_VARIABLES.some((v) => v.env === name), name);
});

test('the census places and the node keeps its condition by default, with an API; neither without one', () => {
  const api = { VPCNET_KUBE_API: 'http://127.0.0.1:8080' };
  assert.deepEqual(parse(api).capacity, {
    census: 'place',
    censusLease: { namespace: 'kube-system', name: 'vpcnet-subnet-census' },
    censusPeriodSeconds: 300,
    readiness: 'condition',
    poolRetryMaxSeconds: 60,
  });
  assert.deepEqual(parse({}).capacity.census, 'off');
  assert.deepEqual(parse({}).capacity.readiness, 'off');
  const set = parse({
    ...api,
    VPCNET_SUBNET_CENSUS: 'observe',
    VPCNET_SUBNET_CENSUS_LEASE: 'vpcnet/census',
    VPCNET_SUBNET_CENSUS_SECONDS: '600',
    VPCNET_NODE_READINESS: 'taint',
    VPCNET_POOL_RETRY_MAX_SECONDS: '2',
  }).capacity;
  assert.deepEqual(set, {
    census: 'observe',
    censusLease: { namespace: 'vpcnet', name: 'census' },
    censusPeriodSeconds: 600,
    readiness: 'taint',
    poolRetryMaxSeconds: 2,
  });
  assert.equal(
    parse({ ...api, ENABLE_IMDS_ONLY_MODE: 'true' }).capacity.census,
    'off',
    'no EC2 call to census with',
  );
  assert.throws(() => parse({ VPCNET_SUBNET_CENSUS_LEASE: 'census' }), /VPCNET_SUBNET_CENSUS_LEASE/);
  assert.throws(() => parse({ VPCNET_SUBNET_CENSUS_SECONDS: '10' }), /VPCNET_SUBNET_CENSUS_SECONDS/);
  assert.throws(() => parse({ VPCNET_NODE_READINESS: 'yes' }), /VPCNET_NODE_READINESS/);
});

test('the EC2 throttle Lease is on with a Kubernetes API, named or turned off by its settings', () => {
  const api = { VPCNET_KUBE_API: 'https://10.96.0.1:443' };
  assert.deepEqual(parse(api).ec2Fleet, {
    lease: { namespace: 'kube-system', name: 'vpcnet-ec2-throttle' },
    daemonSet: { namespace: 'kube-system', name: 'vpcnet' },
  });
  assert.equal(parse({}).ec2Fleet, undefined, 'no API: each agent alone');
  assert.equal(parse({ ...api, VPCNET_EC2_FLEET_LEASE: 'off' }).ec2Fleet, undefined);
  assert.deepEqual(
    parse({ ...api, VPCNET_EC2_FLEET_LEASE: 'net/throttle', VPCNET_EC2_FLEET_DAEMONSET: 'net/agent' })
      .ec2Fleet,
    { lease: { namespace: 'net', name: 'throttle' }, daemonSet: { namespace: 'net', name: 'agent' } },
  );
  assert.throws(() => parse({ VPCNET_EC2_FLEET_LEASE: 'throttle' }), /VPCNET_EC2_FLEET_LEASE/);
  assert.throws(() => parse({ VPCNET_EC2_FLEET_DAEMONSET: 'off' }), /VPCNET_EC2_FLEET_DAEMONSET/);
});
