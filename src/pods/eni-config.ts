// The node's ENIConfig (custom networking): which ENIConfig a node names, and that object's
// subnet and security groups, read through the agent's own Kubernetes client. Upstream's rules:
// the label `vpc.amazonaws.com/externalEniConfig` first, then the annotation named by
// ENI_CONFIG_ANNOTATION_DEF, then the label named by ENI_CONFIG_LABEL_DEF (both default
// `k8s.amazonaws.com/eniConfig`), else the ENIConfig called `default`.
//
// Read again each time an ENI is created rather than watched: that happens a few times in a
// node's life, two GETs then cost nothing, and a relabelled node or edited ENIConfig is seen at
// the next ENI without a cache that could be stale.
import { errorText } from '../infra/error-text.ts';
import type { KubeApiConfig } from './kube-api-config.ts';
import { apiStatus, KubeClient } from './kube-client.ts';

export const ENI_CONFIG_API = '/apis/crd.k8s.amazonaws.com/v1alpha1/eniconfigs';
export const EXTERNAL_ENI_CONFIG_LABEL = 'vpc.amazonaws.com/externalEniConfig';
export const DEFAULT_ENI_CONFIG_KEY = 'k8s.amazonaws.com/eniConfig';
export const DEFAULT_ENI_CONFIG_NAME = 'default';

export interface EniConfigKeys {
  /** ENI_CONFIG_LABEL_DEF. */
  readonly labelKey: string;
  /** ENI_CONFIG_ANNOTATION_DEF. */
  readonly annotationKey: string;
}

/** An ENIConfig's spec, and how the node came to name it (for messages). */
export interface NodeEniConfig {
  readonly name: string;
  readonly chosenBy: string;
  readonly subnetId: string;
  /** Empty: the primary ENI's security groups, as upstream. */
  readonly securityGroupIds: readonly string[];
}

/** A node's ENIConfig cannot be had; the message says which one and why. */
export class EniConfigError extends Error {
  override readonly name = 'EniConfigError';
}

type StringMap = Readonly<Record<string, string>>;

/** Which ENIConfig a node with these labels and annotations names, and by what. */
export function eniConfigNameOf(
  labels: StringMap,
  annotations: StringMap,
  keys: EniConfigKeys,
): { name: string; chosenBy: string } {
  const external = labels[EXTERNAL_ENI_CONFIG_LABEL];
  if (external !== undefined) return { name: external, chosenBy: `node label ${EXTERNAL_ENI_CONFIG_LABEL}` };
  const annotated = annotations[keys.annotationKey];
  if (annotated !== undefined) return { name: annotated, chosenBy: `node annotation ${keys.annotationKey}` };
  const labelled = labels[keys.labelKey];
  if (labelled !== undefined) return { name: labelled, chosenBy: `node label ${keys.labelKey}` };
  return {
    name: DEFAULT_ENI_CONFIG_NAME,
    chosenBy: `no ${keys.annotationKey} annotation nor ${keys.labelKey} label on the node`,
  };
}

/** An ENIConfig object's spec; a missing or malformed subnet is an EniConfigError. */
export function parseEniConfigSpec(
  name: string,
  body: unknown,
): { subnetId: string; securityGroupIds: string[] } {
  const spec = (body as { spec?: { subnet?: unknown; securityGroups?: unknown } } | undefined)?.spec;
  const subnet = spec?.subnet;
  if (typeof subnet !== 'string' || subnet === '') {
    throw new EniConfigError(`ENIConfig ${name} has no spec.subnet`);
  }
  const groups = spec?.securityGroups ?? [];
  if (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string' || g === '')) {
    throw new EniConfigError(`ENIConfig ${name}: spec.securityGroups must be a list of security group IDs`);
  }
  return { subnetId: subnet, securityGroupIds: groups as string[] };
}

function stringMap(value: unknown): StringMap {
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string')) as StringMap;
}

/** The node's ENIConfig, read from the API on every call. */
export class KubeEniConfigs {
  readonly #client: Pick<KubeClient, 'getNode' | 'request'>;
  readonly #nodeName: string;
  readonly #keys: EniConfigKeys;

  constructor(client: Pick<KubeClient, 'getNode' | 'request'>, nodeName: string, keys: EniConfigKeys) {
    this.#client = client;
    this.#nodeName = nodeName;
    this.#keys = keys;
  }

  /** Which ENIConfig the node names, and by what (the node is read; the ENIConfig is not). */
  async chosen(): Promise<{ name: string; chosenBy: string }> {
    let node: unknown;
    try {
      node = await this.#client.getNode(this.#nodeName);
    } catch (err) {
      throw new EniConfigError(
        `cannot read node ${this.#nodeName} to find its ENIConfig: ${errorText(err)}`,
        {
          cause: err,
        },
      );
    }
    const meta = (node as { metadata?: { labels?: unknown; annotations?: unknown } } | undefined)?.metadata;
    return eniConfigNameOf(stringMap(meta?.labels), stringMap(meta?.annotations), this.#keys);
  }

  async current(): Promise<NodeEniConfig> {
    const { name, chosenBy } = await this.chosen();
    let body: unknown;
    try {
      body = await this.#client.request('GET', `${ENI_CONFIG_API}/${encodeURIComponent(name)}`);
    } catch (err) {
      const why = apiStatus(err) === 404 ? 'does not exist' : `cannot be read: ${errorText(err)}`;
      throw new EniConfigError(`ENIConfig ${name} (${chosenBy}) ${why}`, { cause: err });
    }
    return { name, chosenBy, ...parseEniConfigSpec(name, body) };
  }
}

/** The node's ENIConfig through its own client of the API. */
export function kubeEniConfigs(api: KubeApiConfig, nodeName: string, keys: EniConfigKeys): KubeEniConfigs {
  return new KubeEniConfigs(new KubeClient(api, { timeoutMs: 5000 }), nodeName, keys);
}
