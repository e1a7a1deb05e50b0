// deploy/ as an operator applies it: the base and each overlay rendered with `kubectl kustomize`
// (no cluster), every object checked against the Kubernetes API schemas, then the points a node
// depends on: host network, tolerations, the capabilities, the netns mount's propagation, the
// probes, the ClusterRole's rights, and settings the agent really parses. Needs kubectl and
// python3-yaml (deploy-render.ts says why); outside CI it skips without them, under CI=true it
// fails. KUBECTL=/path/to/kubectl renders with another kubectl (e.g. Debian's 1.20, kustomize v2).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { before, describe, test } from 'node:test';
import type { IPodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPod } from 'kubernetes-models/v1/Pod';
import { agentConfigFromEnv } from '../../src/config/agent-config.ts';
import { DOCUMENTED_VARIABLES } from '../../src/config/settings.ts';
import { daemonSetPod, VPCNET_DAEMONSET } from '../../src/lab/pod-runtime.ts';
import { type Manifests, missingRenderTools, render, repoRoot } from './deploy-render.ts';

const underCi = process.env.CI === 'true' || process.env.CI === '1';
const missing = await missingRenderTools();
const skip = missing.length > 0 && !underCi ? `needs ${missing.join(', ')}` : false;

const { version } = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
const IMAGE = `localhost/vpcnet:${version}`;
const CUSTOM_IMAGE = `registry.example.com/vpcnet:${version}`;
const VPCNETCTL = '/opt/vpcnet/bin/vpcnetctl';
const LABELS = { 'app.kubernetes.io/name': 'vpcnet', 'k8s-app': 'vpcnet' };

function podSpec(ds: IDaemonSet) {
  const spec = ds.spec?.template.spec;
  assert.ok(spec, 'the DaemonSet has a pod template spec');
  return spec;
}

function containerNamed(ds: IDaemonSet, name: string): IContainer {
  const spec = podSpec(ds);
  const found = [...spec.containers, ...(spec.initContainers ?? [])].find((c) => c.name === name);
  assert.ok(found, `the DaemonSet has a container ${name}`);
  return found;
}
const agentOf = (m: Manifests) => containerNamed(m.daemonSet, 'vpcnet');
const installerOf = (m: Manifests) => containerNamed(m.daemonSet, 'install-cni');

/** A container's mounts as host path → path inside, with their propagation. */
function hostMounts(ds: IDaemonSet, c: IContainer): { host: string; inside: string; propagation: string }[] {
  const volumes = podSpec(ds).volumes ?? [];
  return (c.volumeMounts ?? []).map((m) => {
    const host = volumes.find((v) => v.name === m.name)?.hostPath?.path;
    assert.ok(host !== undefined, `mount ${m.name} of ${c.name} is a hostPath volume`);
    return { host, inside: m.mountPath, propagation: m.mountPropagation ?? 'None' };
  });
}

/** The environment the agent starts with: the ConfigMap, then the container's own variables. */
function agentEnv(m: Manifests): Record<string, string> {
  const env: Record<string, string> = { ...(m.configMap.data ?? {}) };
  for (const e of agentOf(m).env ?? []) env[e.name] = e.value ?? `<from ${e.valueFrom?.fieldRef?.fieldPath}>`;
  return env;
}

/** The manifests with the ConfigMap's content hash taken out of its name (and the reference to it). */
function withoutConfigHash(m: Manifests): Manifests {
  const copy = structuredClone(m);
  const { annotations, ...meta } = copy.configMap.metadata ?? {};
  // kustomize v2 adds empty annotations to a ConfigMap an overlay merges into: the same object.
  copy.configMap.metadata = {
    ...meta,
    ...(Object.keys(annotations ?? {}).length > 0 ? { annotations } : {}),
    name: 'vpcnet-config',
  };
  for (const c of [
    ...podSpec(copy.daemonSet).containers,
    ...(podSpec(copy.daemonSet).initContainers ?? []),
  ]) {
    for (const from of c.envFrom ?? []) if (from.configMapRef) from.configMapRef.name = 'vpcnet-config';
    if (c.ports?.length === 0) delete c.ports;
  }
  return copy;
}

/** Asserts that `overlay` is the base with `change` applied, and nothing else. */
function assertOverlayIs(base: Manifests, overlay: Manifests, change: (m: Manifests) => void): void {
  const expected = withoutConfigHash(base);
  change(expected);
  assert.deepEqual(withoutConfigHash(overlay).all, expected.all);
}

describe('deploy/: the kustomize base and overlays', { skip }, () => {
  let base: Manifests;

  before(async () => {
    if (missing.length > 0) throw new Error(`cannot render deploy/: missing ${missing.join(', ')}`);
    base = await render('base');
  });

  test('the base renders a service account, a ClusterRole, a Role, their bindings, a ConfigMap and a DaemonSet, each valid against the API schema', () => {
    assert.deepEqual(base.all.map((o) => o.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'DaemonSet',
      'Role',
      'RoleBinding',
      'ServiceAccount',
    ]);
  });

  test('every object carries the vpcnet labels, and the namespaced ones live in kube-system', () => {
    for (const o of base.all) {
      assert.deepEqual(o.metadata?.labels, LABELS, `${o.kind} labels`);
      if (o.kind !== 'ClusterRole' && o.kind !== 'ClusterRoleBinding') {
        assert.equal(o.metadata?.namespace, 'kube-system', `${o.kind} namespace`);
      }
    }
    assert.deepEqual(base.daemonSet.spec?.selector.matchLabels, { 'k8s-app': 'vpcnet' });
    assert.deepEqual(base.daemonSet.spec?.template.metadata?.labels, LABELS);
  });

  test("the lab's DaemonSet pods are this DaemonSet's: namespace, labels, the agent's container and where its programs are", () => {
    const pod = daemonSetPod({ name: 'node1' }, '10.0.0.10') as unknown as IPod;
    assert.equal(pod.metadata?.namespace, base.daemonSet.metadata?.namespace);
    assert.deepEqual(pod.metadata?.labels, base.daemonSet.spec?.template.metadata?.labels);
    assert.equal(pod.metadata?.ownerReferences?.[0]?.name, base.daemonSet.metadata?.name);
    const agent = agentOf(base);
    assert.equal(agent.name, VPCNET_DAEMONSET.container);
    assert.deepEqual(pod.spec?.containers[0]?.command, agent.command);
    assert.equal(dirname(agent.command?.[0] ?? ''), VPCNET_DAEMONSET.imageBinDir);
  });

  test("the ClusterRole grants exactly pods get/list/watch/patch, nodes get/patch, nodes/status patch, core events create, ENIConfigs get, CNINodes get/create/patch and get of kube-proxy's ConfigMaps by name", () => {
    const rules = (base.clusterRole.rules ?? []).map((r) => ({
      apiGroups: [...(r.apiGroups ?? [])].sort(),
      resources: [...(r.resources ?? [])].sort(),
      verbs: [...r.verbs].sort(),
      extra: r.resourceNames ?? r.nonResourceURLs ?? [],
    }));
    assert.deepEqual(rules, [
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'patch', 'watch'], extra: [] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'], extra: [] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'], extra: [] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'], extra: [] },
      { apiGroups: ['crd.k8s.amazonaws.com'], resources: ['eniconfigs'], verbs: ['get'], extra: [] },
      {
        apiGroups: ['vpcresources.k8s.aws'],
        resources: ['cninodes'],
        verbs: ['create', 'get', 'patch'],
        extra: [],
      },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ['get'],
        extra: ['kube-proxy-config', 'kube-proxy'],
      },
    ]);
    assert.equal(base.clusterRole.aggregationRule, undefined);
  });

  test("the Role grants the census and EC2 throttle Leases and a read of the agent's DaemonSet, named as the agent defaults to them, and nothing else of kube-system", () => {
    const rules = (base.role.rules ?? []).map((r) => ({
      apiGroups: [...(r.apiGroups ?? [])],
      resources: [...(r.resources ?? [])],
      verbs: [...r.verbs].sort(),
      names: r.resourceNames ?? [],
    }));
    const config = agentConfigFromEnv({ VPCNET_KUBE_API: 'http://api' });
    const lease = config.capacity.censusLease;
    const fleet = config.ec2Fleet;
    assert.ok(fleet, 'the throttle Lease is on by default with a Kubernetes API');
    for (const named of [lease, fleet.lease, fleet.daemonSet])
      assert.equal(named.namespace, base.role.metadata?.namespace);
    assert.deepEqual(rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'], names: [] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'update'],
        names: [lease.name, fleet.lease.name],
      },
      { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['get'], names: [fleet.daemonSet.name] },
    ]);
    // The DaemonSet the agents count themselves by is the one deploy/ ships.
    assert.equal(fleet.daemonSet.name, base.daemonSet.metadata?.name);
    assert.deepEqual(base.roleBinding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'vpcnet',
    });
    assert.deepEqual(base.roleBinding.subjects, [
      { kind: 'ServiceAccount', name: 'vpcnet', namespace: 'kube-system' },
    ]);
  });

  test("the binding gives that ClusterRole to the DaemonSet's service account and nothing else", () => {
    const b = base.clusterRoleBinding;
    assert.deepEqual(b.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'vpcnet',
    });
    assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: 'vpcnet', namespace: 'kube-system' }]);
    assert.equal(base.serviceAccount.metadata?.name, 'vpcnet');
    assert.equal(podSpec(base.daemonSet).serviceAccountName, 'vpcnet');
  });

  test('the agent runs on the host network of every Linux node, at system-node-critical, tolerating every taint', () => {
    const spec = podSpec(base.daemonSet);
    assert.equal(spec.hostNetwork, true);
    assert.equal(spec.dnsPolicy, 'ClusterFirstWithHostNet');
    assert.equal(spec.priorityClassName, 'system-node-critical');
    assert.deepEqual(spec.tolerations, [{ operator: 'Exists' }]);
    assert.deepEqual(spec.nodeSelector, { 'kubernetes.io/os': 'linux' });
  });

  test('a rolling update never runs two agents on one node', () => {
    assert.deepEqual(base.daemonSet.spec?.updateStrategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
  });

  test('the agent has exactly NET_ADMIN and SYS_ADMIN and is not privileged; the installer has no capability; seccomp stays on', () => {
    const agent = agentOf(base).securityContext;
    assert.equal(agent?.privileged, false);
    assert.deepEqual([...(agent?.capabilities?.add ?? [])].sort(), ['NET_ADMIN', 'SYS_ADMIN']);
    assert.deepEqual(agent?.capabilities?.drop, ['ALL']);
    // A rule of the API server that the schema does not carry: false together with SYS_ADMIN is refused.
    assert.notEqual(agent?.allowPrivilegeEscalation, false);
    const installer = installerOf(base).securityContext;
    assert.equal(installer?.privileged, false);
    assert.equal(installer?.capabilities?.add, undefined);
    assert.deepEqual(installer?.capabilities?.drop, ['ALL']);
    assert.equal(podSpec(base.daemonSet).hostPID, undefined);
    assert.deepEqual(podSpec(base.daemonSet).securityContext, { seccompProfile: { type: 'RuntimeDefault' } });
  });

  test("the agent sees pod namespaces mounted after it started (HostToContainer), its state and socket dirs, and aws-node's checkpoint (read-only)", () => {
    assert.deepEqual(
      hostMounts(base.daemonSet, agentOf(base)).sort((a, b) => a.inside.localeCompare(b.inside)),
      [
        { host: '/run/vpcnet', inside: '/run/vpcnet', propagation: 'None' },
        { host: '/var/lib/vpcnet', inside: '/var/lib/vpcnet', propagation: 'None' },
        { host: '/var/run/aws-node', inside: '/var/run/aws-node', propagation: 'None' },
        { host: '/var/run/netns', inside: '/var/run/netns', propagation: 'HostToContainer' },
      ],
    );
    const checkpointDir = agentOf(base).volumeMounts?.find((m) => m.mountPath === '/var/run/aws-node');
    assert.equal(checkpointDir?.readOnly, true);
    // Where the agent looks by default is inside that mount.
    assert.ok(agentConfigFromEnv(agentEnv(base)).adoptAwsNode?.checkpoint.startsWith('/var/run/aws-node/'));
  });

  test("the init container installs the plugin and the conflist into the host's CNI dirs", () => {
    const installer = installerOf(base);
    assert.deepEqual(installer.command, [
      VPCNETCTL,
      'install',
      '--cni-bin-dir',
      '/host/opt/cni/bin',
      '--cni-conf-dir',
      '/host/etc/cni/net.d',
      '--partner-plugins-dir',
      '/opt/vpcnet/cni-partners',
    ]);
    assert.deepEqual(
      hostMounts(base.daemonSet, installer).sort((a, b) => a.inside.localeCompare(b.inside)),
      [
        { host: '/etc/cni/net.d', inside: '/host/etc/cni/net.d', propagation: 'None' },
        { host: '/opt/cni/bin', inside: '/host/opt/cni/bin', propagation: 'None' },
      ],
    );
    assert.deepEqual(
      podSpec(base.daemonSet).initContainers?.map((c) => c.name),
      ['install-cni', 'doctor'],
    );
  });

  test('the doctor runs as the last init step: read-only, with the agent’s settings, its findings beside the socket', () => {
    const doctor = containerNamed(base.daemonSet, 'doctor');
    assert.deepEqual(doctor.command, [
      VPCNETCTL,
      'doctor',
      '--init',
      '--node-root',
      '/host',
      '--modules',
      '/host/lib/modules',
    ]);
    assert.deepEqual(doctor.envFrom, agentOf(base).envFrom);
    assert.deepEqual(doctor.env, agentOf(base).env, 'the node name as the agent gets it');
    assert.equal(doctor.image, IMAGE);
    const sc = doctor.securityContext;
    assert.equal(sc?.privileged, false);
    assert.equal(sc?.readOnlyRootFilesystem, true);
    assert.deepEqual(sc?.capabilities?.drop, ['ALL']);
    assert.equal(sc?.capabilities?.add, undefined);
    const mounts = hostMounts(base.daemonSet, doctor).sort((a, b) => a.inside.localeCompare(b.inside));
    assert.deepEqual(mounts, [
      { host: '/etc/kubernetes/kubelet', inside: '/host/etc/kubernetes/kubelet', propagation: 'None' },
      { host: '/etc/NetworkManager', inside: '/host/etc/NetworkManager', propagation: 'None' },
      { host: '/etc/systemd', inside: '/host/etc/systemd', propagation: 'None' },
      { host: '/lib/modules', inside: '/host/lib/modules', propagation: 'None' },
      { host: '/run/vpcnet', inside: '/run/vpcnet', propagation: 'None' },
    ]);
    for (const m of doctor.volumeMounts ?? [])
      assert.equal(
        m.readOnly === true,
        m.mountPath !== '/run/vpcnet',
        `${m.mountPath}: only the socket dir is writable`,
      );
  });

  test('readiness asks vpcnetctl health; liveness and start-up ask vpcnetctl health --live', () => {
    const agent = agentOf(base);
    assert.deepEqual(agent.command, ['/opt/vpcnet/bin/vpcnetd']);
    assert.deepEqual(agent.readinessProbe?.exec?.command, [VPCNETCTL, 'health']);
    assert.deepEqual(agent.livenessProbe?.exec?.command, [VPCNETCTL, 'health', '--live']);
    assert.deepEqual(agent.startupProbe?.exec?.command, [VPCNETCTL, 'health', '--live']);
    for (const probe of [agent.readinessProbe, agent.livenessProbe, agent.startupProbe]) {
      assert.ok(
        (probe?.periodSeconds ?? 0) > 0 && (probe?.timeoutSeconds ?? 0) > 0,
        'period and timeout set',
      );
    }
  });

  test('every variable the agent is given is one it parses, and it accepts their values', () => {
    const documented = new Set(DOCUMENTED_VARIABLES.map((v) => v.env));
    const env = agentEnv(base);
    for (const name of Object.keys(env))
      assert.ok(documented.has(name), `${name} is not a setting of the agent`);
    for (const e of installerOf(base).env ?? []) assert.ok(documented.has(e.name), `${e.name} (installer)`);
    const config = agentConfigFromEnv(env);
    assert.equal(config.nodeName, '<from spec.nodeName>', 'MY_NODE_NAME comes from spec.nodeName');
    assert.equal(config.metricsPort, 61678);
    assert.deepEqual(config.introspection, { host: '127.0.0.1', port: 61679 });
    assert.equal(config.startupTaint, 'node.vpcnet.io/agent-not-ready');
    assert.equal(config.enablePodEni, false);
  });

  test('the agent and its install step read the generated ConfigMap, whose name changes with its contents', () => {
    const cm = base.configMap.metadata?.name ?? '';
    assert.match(cm, /^vpcnet-config-[a-z0-9]+$/);
    assert.deepEqual(agentOf(base).envFrom, [{ configMapRef: { name: cm } }]);
    // Upstream's init container shares aws-node's settings: DISABLE_POD_V6 and the sysctl switches.
    assert.deepEqual(installerOf(base).envFrom, [{ configMapRef: { name: cm } }]);
  });

  test('the metrics port is declared as the one the agent listens on', () => {
    const port = agentConfigFromEnv(agentEnv(base)).metricsPort;
    assert.deepEqual(agentOf(base).ports, [{ name: 'metrics', containerPort: port, protocol: 'TCP' }]);
  });

  test(`every container runs ${IMAGE}`, () => {
    assert.equal(agentOf(base).image, IMAGE);
    assert.equal(installerOf(base).image, IMAGE);
    assert.equal(containerNamed(base.daemonSet, 'doctor').image, IMAGE);
  });

  test('resources fit the agent, and the grace period outlasts an ADD waiting for addresses', () => {
    const r = agentOf(base).resources;
    assert.deepEqual(r?.requests, { cpu: '25m', memory: '80Mi' });
    assert.equal(r?.limits?.cpu, undefined, 'no CPU limit');
    assert.match(String(r?.limits?.memory), /^\d+Mi$/);
    assert.ok(
      Number.parseInt(String(r?.limits?.memory), 10) >= 2 * 80,
      'memory limit leaves room for probes',
    );
    const grace = podSpec(base.daemonSet).terminationGracePeriodSeconds ?? 30;
    const addWait = agentConfigFromEnv(agentEnv(base)).addWaitSeconds;
    assert.ok(grace > addWait, `grace ${grace} s, an ADD may wait ${addWait} s`);
  });

  test('overlays/pod-eni turns pod ENIs on with the vlan trunk driver in strict mode, and changes nothing else', async () => {
    const overlay = await render('overlays/pod-eni');
    assertOverlayIs(base, overlay, (m) => {
      m.configMap.data = {
        ...m.configMap.data,
        ENABLE_POD_ENI: 'true',
        POD_SECURITY_GROUP_ENFORCING_MODE: 'strict',
        VPCNET_TRUNK_DRIVER: 'vlan',
      };
    });
    const config = agentConfigFromEnv(agentEnv(overlay));
    assert.equal(config.enablePodEni, true);
    assert.equal(config.trunkDriver, 'vlan');
    assert.notEqual(overlay.configMap.metadata?.name, base.configMap.metadata?.name, 'agents roll');
  });

  test('overlays/ipv6 turns IPv6 mode on with prefix delegation and has the privileged install step set forwarding, and changes nothing else', async () => {
    const overlay = await render('overlays/ipv6');
    assertOverlayIs(base, overlay, (m) => {
      m.configMap.data = { ...m.configMap.data, ENABLE_IPv6: 'true', ENABLE_PREFIX_DELEGATION: 'true' };
      const install = podSpec(m.daemonSet).initContainers?.find((c) => c.name === 'install-cni');
      assert.ok(install);
      install.command = [...(install.command ?? []), '--ipv6-forwarding'];
      install.securityContext = {
        ...install.securityContext,
        privileged: true,
        allowPrivilegeEscalation: true,
      };
    });
    const config = agentConfigFromEnv(agentEnv(overlay));
    assert.deepEqual(config.ipv6, { enabled: true, v4Egress: true });
    assert.notEqual(overlay.configMap.metadata?.name, base.configMap.metadata?.name, 'agents roll');
  });

  test('overlays/custom-image points both containers at the edited image, and changes nothing else', async () => {
    const overlay = await render('overlays/custom-image');
    assertOverlayIs(base, overlay, (m) => {
      for (const c of [...podSpec(m.daemonSet).containers, ...(podSpec(m.daemonSet).initContainers ?? [])]) {
        c.image = CUSTOM_IMAGE;
      }
    });
  });

  test('overlays/no-metrics turns metrics off and declares no port, and changes nothing else', async () => {
    const overlay = await render('overlays/no-metrics');
    assertOverlayIs(base, overlay, (m) => {
      m.configMap.data = { ...m.configMap.data, DISABLE_METRICS: 'true' };
      delete containerNamed(m.daemonSet, 'vpcnet').ports;
    });
    assert.equal(agentConfigFromEnv(agentEnv(overlay)).metricsPort, undefined);
  });

  test('overlays/pod-monitor adds a valid PodMonitor that scrapes every agent’s metrics port, and changes nothing else', async () => {
    const overlay = await render('overlays/pod-monitor');
    const monitors = overlay.all.filter((o) => o.kind === 'PodMonitor');
    assert.equal(monitors.length, 1, 'one PodMonitor, checked against the Prometheus Operator schema');
    const monitor = monitors[0] as IPodMonitor;
    const rest = { ...overlay, all: overlay.all.filter((o) => o.kind !== 'PodMonitor') };
    assertOverlayIs(base, rest, () => {});
    assert.equal(monitor.metadata?.namespace, 'kube-system');
    assert.deepEqual(monitor.metadata?.labels, LABELS);
    assert.deepEqual(monitor.spec.namespaceSelector, { matchNames: ['kube-system'] });
    // Its selector picks the agent's pods, and no pod of the namespace that is not one.
    const podLabels = base.daemonSet.spec?.template.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels ?? {}))
      assert.equal(podLabels[k], v, `the agent's pods carry ${k}=${v}`);
    assert.deepEqual(monitor.spec.selector.matchLabels, base.daemonSet.spec?.selector.matchLabels);
    const [endpoint, ...more] = monitor.spec.podMetricsEndpoints ?? [];
    assert.equal(more.length, 0);
    const port = agentOf(base).ports?.find((p) => p.name === endpoint?.port);
    assert.ok(port, `the endpoint names the agent container's port ${endpoint?.port}`);
    assert.equal(
      port.containerPort,
      agentConfigFromEnv(agentEnv(base)).metricsPort,
      'where the agent listens',
    );
    assert.equal(endpoint?.path, '/metrics');
    const seconds = (d: string | undefined) => Number(/^(\d+)s$/.exec(d ?? '')?.[1] ?? Number.NaN);
    assert.ok(
      seconds(endpoint?.scrapeTimeout) < seconds(endpoint?.interval),
      'a scrape ends before the next',
    );
  });

  test("overlays/migration runs the agent only on nodes labelled as moved off aws-node, moves aws-node's conflist aside, and changes nothing else", async () => {
    const overlay = await render('overlays/migration');
    assertOverlayIs(base, overlay, (m) => {
      podSpec(m.daemonSet).nodeSelector = { 'kubernetes.io/os': 'linux', 'node.vpcnet.io/cni': 'vpcnet' };
      const installer = installerOf(m);
      installer.command = [...(installer.command ?? []), '--replace-aws-node'];
    });
  });
});

test("the README's list of aws-node settings vpcnet honours is exactly settings.ts's upstream names", async () => {
  const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.split('\n## Switching from aws-node\n')[1] ?? '';
  // The bullets that list honoured names: the general one, and the cloud side's.
  const bullet = (title: string) =>
    new RegExp(`\\*\\*${title}\\*\\*([\\s\\S]*?)\\n- \\*\\*`).exec(section)?.[1] ?? '';
  const items = [
    bullet('Same name, same meaning').split('`ENABLE_BANDWIDTH_PLUGIN`')[0]!,
    bullet('Locked-down VPCs, which ENIs are used, credentials').split('Where vpcnet differs on purpose')[0]!,
  ];
  const listed = [
    ...new Set(items.flatMap((i) => [...i.matchAll(/`([A-Z][A-Za-z0-9_]+)`/g)].map((m) => m[1]))),
  ];
  const upstream = DOCUMENTED_VARIABLES.filter((v) => v.upstream).map((v) => v.env);
  assert.deepEqual([...listed].sort(), [...upstream].sort());
});
