// API discovery, the documents kubectl reads before it acts on a resource by name (`kubectl exec
// POD` maps "pods" through it): /version, /api, /api/v1 and /apis, in their legacy JSON form
// (kubectl asks for aggregated discovery first and takes this when the answer is plain JSON). The
// core group only: what kubectl needs of this slice; the other groups are reached by path.
import type { JsonObject } from './objects.ts';

/** The Kubernetes version the slice answers /version with (kubectl's own minor, 1.32). */
export const EMULATED_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.0-vpcnet-emulator' } as const;

const READ_WRITE = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];

/** The core resources the slice serves (kube-api.ts), as the API server lists them. */
const CORE_RESOURCES: readonly JsonObject[] = [
  { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: READ_WRITE, shortNames: ['po'] },
  { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
  {
    name: 'nodes',
    singularName: 'node',
    namespaced: false,
    kind: 'Node',
    verbs: ['get', 'list', 'patch', 'watch'],
    shortNames: ['no'],
  },
  { name: 'nodes/status', singularName: '', namespaced: false, kind: 'Node', verbs: ['get', 'patch'] },
  {
    name: 'events',
    singularName: 'event',
    namespaced: true,
    kind: 'Event',
    verbs: ['create', 'get', 'list'],
    shortNames: ['ev'],
  },
  {
    name: 'configmaps',
    singularName: 'configmap',
    namespaced: true,
    kind: 'ConfigMap',
    verbs: READ_WRITE,
    shortNames: ['cm'],
  },
];

/** The discovery document at `path`, or undefined when `path` is not one. */
export function discoveryDocument(path: string): JsonObject | undefined {
  switch (path) {
    case '/version':
      return {
        ...EMULATED_VERSION,
        gitCommit: '',
        gitTreeState: 'clean',
        buildDate: '',
        goVersion: '',
        compiler: 'gc',
        platform: 'linux/amd64',
      };
    case '/api':
      return {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '' }],
      };
    case '/api/v1':
      return { kind: 'APIResourceList', groupVersion: 'v1', resources: [...CORE_RESOURCES] };
    case '/apis':
      return { kind: 'APIGroupList', apiVersion: 'v1', groups: [] };
    default:
      return undefined;
  }
}
