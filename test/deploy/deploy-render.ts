// Renders deploy/ as an operator would (`kubectl kustomize DIR`, no cluster) and reads the result
// into Kubernetes objects, each checked against the API schemas (kubernetes-models, Kubernetes
// 1.27; the Prometheus Operator's for a PodMonitor) before a test looks inside.
//
// YAML is read by Debian's python3 and its yaml module (Debian: python3-yaml): `kubectl kustomize` prints only
// YAML, Node has no YAML parser, the project adds no npm dependency for tests, and the kubectl
// commands that print JSON need a cluster (or, with --local, rewrite the objects they print). A
// YAML 1.1 reader is safe here because kustomize (v2 and v5 alike) quotes every string that YAML
// 1.1 would read as something else ("on", "0600", "false"), and a value read wrongly fails the
// schema check (a ConfigMap's data must be strings).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type IPodMonitor,
  PodMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import {
  type IValidatingAdmissionPolicy,
  ValidatingAdmissionPolicy,
} from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import {
  type IValidatingAdmissionPolicyBinding,
  ValidatingAdmissionPolicyBinding,
} from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';
import { DaemonSet, type IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ClusterRole, type IClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import {
  ClusterRoleBinding,
  type IClusterRoleBinding,
} from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { type IRole, Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { type IRoleBinding, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { type IServiceAccount, ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { runProcess, runToSuccess } from '../../src/infra/process.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const deployDir = join(repoRoot, 'deploy');

/**
 * The kubectl that renders: `kubectl` on PATH, or another one named by KUBECTL (e.g. Debian's
 * kubernetes-client 1.20, whose kustomize is v2.0.3, to check that the files suit both).
 */
export const kubectl = process.env.KUBECTL ?? 'kubectl';

const YAML_TO_JSON =
  'import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)';

/** What rendering needs and this machine lacks (empty: all there). */
export async function missingRenderTools(): Promise<string[]> {
  const missing: string[] = [];
  if ((await runProcess([kubectl, 'version', '--client'])).code !== 0)
    missing.push(`${kubectl} (kubernetes-client)`);
  if ((await runProcess(['/usr/bin/python3', '-c', 'import yaml'])).code !== 0)
    missing.push('python3 with yaml (python3-yaml)');
  return missing;
}

/** The objects of one kustomization, every one of a kind the manifests may hold. */
export interface Manifests {
  readonly serviceAccount: IServiceAccount;
  readonly clusterRole: IClusterRole;
  readonly clusterRoleBinding: IClusterRoleBinding;
  readonly role: IRole;
  readonly roleBinding: IRoleBinding;
  readonly configMap: IConfigMap;
  readonly daemonSet: IDaemonSet;
  /** Every object, in the order rendered. */
  readonly all: readonly Rendered[];
}

/** An object of a kind deploy/ holds, checked against its schema. */
export type Rendered =
  | IServiceAccount
  | IClusterRole
  | IClusterRoleBinding
  | IRole
  | IRoleBinding
  | IConfigMap
  | IDaemonSet
  | IValidatingAdmissionPolicy
  | IValidatingAdmissionPolicyBinding
  | IPodMonitor;

/** One validated object of a kind the manifests may hold; anything else is an error. */
function validated(obj: unknown): Rendered {
  const o = (obj ?? {}) as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
  const what = `${String(o.apiVersion)} ${String(o.kind)} ${String(o.metadata?.name)}`;
  let model: { validate(): void; toJSON(): unknown };
  switch (`${String(o.apiVersion)}/${String(o.kind)}`) {
    case 'v1/ServiceAccount':
      model = new ServiceAccount(obj as IServiceAccount);
      break;
    case 'v1/ConfigMap':
      model = new ConfigMap(obj as IConfigMap);
      break;
    case 'rbac.authorization.k8s.io/v1/ClusterRole':
      model = new ClusterRole(obj as IClusterRole);
      break;
    case 'rbac.authorization.k8s.io/v1/ClusterRoleBinding':
      model = new ClusterRoleBinding(obj as IClusterRoleBinding);
      break;
    case 'rbac.authorization.k8s.io/v1/Role':
      model = new Role(obj as IRole);
      break;
    case 'rbac.authorization.k8s.io/v1/RoleBinding':
      model = new RoleBinding(obj as IRoleBinding);
      break;
    case 'apps/v1/DaemonSet':
      model = new DaemonSet(obj as IDaemonSet);
      break;
    case 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy':
      model = new ValidatingAdmissionPolicy(obj as IValidatingAdmissionPolicy);
      break;
    case 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding':
      model = new ValidatingAdmissionPolicyBinding(obj as IValidatingAdmissionPolicyBinding);
      break;
    case 'monitoring.coreos.com/v1/PodMonitor':
      model = new PodMonitor(obj as IPodMonitor);
      break;
    default:
      throw new Error(`${what}: not a kind the manifests should hold (no schema check for it here)`);
  }
  try {
    model.validate();
  } catch (err) {
    throw new Error(`${what} does not match the Kubernetes API schema: ${String(err)}`, { cause: err });
  }
  return obj as Rendered;
}

function onlyOne<K extends Rendered['kind']>(
  all: readonly Rendered[],
  kind: K,
): Extract<Rendered, { kind: K }> {
  const found = all.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, the manifests have ${found.length}`);
  return found[0] as Extract<Rendered, { kind: K }>;
}

/** Every object of `kubectl kustomize deploy/<dir>`, read and validated. */
export async function renderObjects(dir: string): Promise<Rendered[]> {
  const yaml = await runToSuccess([kubectl, 'kustomize', join(deployDir, dir)], { timeoutMs: 60_000 });
  const json = await runToSuccess(['/usr/bin/python3', '-c', YAML_TO_JSON], {
    stdin: yaml.stdout,
    timeoutMs: 60_000,
  });
  return (JSON.parse(json.stdout) as unknown[]).map(validated);
}

/** The agent's manifests: `kubectl kustomize deploy/<dir>`, read and validated. */
export async function render(dir: string): Promise<Manifests> {
  const all = await renderObjects(dir);
  return {
    serviceAccount: onlyOne(all, 'ServiceAccount'),
    clusterRole: onlyOne(all, 'ClusterRole'),
    clusterRoleBinding: onlyOne(all, 'ClusterRoleBinding'),
    role: onlyOne(all, 'Role'),
    roleBinding: onlyOne(all, 'RoleBinding'),
    configMap: onlyOne(all, 'ConfigMap'),
    daemonSet: onlyOne(all, 'DaemonSet'),
    all,
  };
}
