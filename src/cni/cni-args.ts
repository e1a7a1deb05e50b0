// CNI_ARGS ("K=V;K=V") and the Kubernetes pod identity the kubelet/containerd put there.
import { CNI_ERR_INVALID_ENV, CniError } from './errors.ts';

export interface PodIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
  /** The sandbox (pause) container, as the runtime names it. */
  readonly infraContainerId?: string;
}

/** Empty segments are skipped (runtimes leave trailing ';'); a value may itself contain '='. */
export function parseCniArgs(raw: string | undefined): ReadonlyMap<string, string> {
  const args = new Map<string, string>();
  if (raw === undefined) return args;
  for (const pair of raw.split(';')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CniError(CNI_ERR_INVALID_ENV, 'CNI_ARGS: invalid pair (want KEY=VALUE)', pair);
    args.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return args;
}

/** The pod this sandbox belongs to, or undefined outside Kubernetes (cnitool, podman). */
export function podIdentityFrom(args: ReadonlyMap<string, string>): PodIdentity | undefined {
  const namespace = args.get('K8S_POD_NAMESPACE');
  const name = args.get('K8S_POD_NAME');
  if (namespace === undefined || namespace === '' || name === undefined || name === '') return undefined;
  const pod: { namespace: string; name: string; uid?: string; infraContainerId?: string } = {
    namespace,
    name,
  };
  const uid = args.get('K8S_POD_UID');
  if (uid !== undefined && uid !== '') pod.uid = uid;
  const infra = args.get('K8S_POD_INFRA_CONTAINER_ID');
  if (infra !== undefined && infra !== '') pod.infraContainerId = infra;
  return pod;
}
