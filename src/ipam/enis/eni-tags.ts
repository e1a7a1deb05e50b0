// The tags an ENI vpcnet creates carries beyond its owner marks: when it was created (what the
// leaked-ENI sweep ages it by), the cluster, and the operator's ADDITIONAL_ENI_TAGS, with the
// upstream's meaning and checked once at start.

/** The upstream's creation-time tag (RFC 3339): the leaked-ENI sweep leaves younger ENIs alone. */
export const CREATED_AT_TAG = 'node.k8s.amazonaws.com/createdAt';
/** The upstream's cluster tag, set from CLUSTER_NAME. */
export const CLUSTER_NAME_TAG = 'cluster.k8s.amazonaws.com/name';
/**
 * The upstream reserves keys containing this for itself (it drops such ADDITIONAL_ENI_TAGS keys
 * with a warning; vpcnet refuses them at start, so a typo is seen rather than silently lost).
 */
export const RESERVED_TAG_KEY_PART = 'k8s.amazonaws.com';
/** EC2 keeps keys starting with this for AWS itself and refuses them in CreateNetworkInterface. */
const AWS_RESERVED_PREFIX = 'aws:';
/** EC2's limits: keys of 1-128 characters, values of up to 256, at most 50 tags on a resource. */
const MAX_KEY_LENGTH = 128;
const MAX_VALUE_LENGTH = 256;
export const MAX_TAGS_PER_ENI = 50;

/** What vpcnet puts on every ENI it creates, besides its own owner marks. */
export interface EniTagOptions {
  /** CLUSTER_NAME (upstream): tagged as cluster.k8s.amazonaws.com/name when set. */
  readonly clusterName?: string;
  /** ADDITIONAL_ENI_TAGS, already checked by parseAdditionalEniTags. */
  readonly additionalTags?: Readonly<Record<string, string>>;
}

/** RFC 3339 in UTC to the second, as the upstream writes its createdAt tag. */
export function createdAtTagValue(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** ms since epoch from a createdAt tag, or undefined when it is missing or not RFC 3339. */
export function parseCreatedAtTag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * ADDITIONAL_ENI_TAGS as the upstream defines it: a JSON object of tag keys to string values.
 * Throws an Error saying what is wrong (bad JSON, a value that is not a string, a reserved or
 * over-long key, too many tags): the agent refuses to start rather than tag ENIs half-way.
 * `ownKeys` are the keys vpcnet sets itself, which an additional tag may not replace.
 */
export function parseAdditionalEniTags(text: string, ownKeys: readonly string[]): Record<string, string> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new Error('expected a JSON object of tag keys to values, e.g. {"team":"net"}');
  const tags: Record<string, string> = {};
  for (const [key, value] of Object.entries(json)) {
    if (typeof value !== 'string') throw new Error(`the value of tag "${key}" must be a string`);
    if (key.length === 0 || key.length > MAX_KEY_LENGTH)
      throw new Error(`tag key "${key}" must have 1 to ${MAX_KEY_LENGTH} characters`);
    if (value.length > MAX_VALUE_LENGTH)
      throw new Error(`the value of tag "${key}" must have at most ${MAX_VALUE_LENGTH} characters`);
    if (key.includes(RESERVED_TAG_KEY_PART))
      throw new Error(`tag key "${key}" contains the reserved "${RESERVED_TAG_KEY_PART}"`);
    if (key.toLowerCase().startsWith(AWS_RESERVED_PREFIX))
      throw new Error(`tag key "${key}" starts with "${AWS_RESERVED_PREFIX}", which AWS reserves`);
    if (ownKeys.includes(key)) throw new Error(`tag key "${key}" is one vpcnet sets itself`);
    tags[key] = value;
  }
  const room = MAX_TAGS_PER_ENI - ownKeys.length;
  if (Object.keys(tags).length > room)
    throw new Error(`at most ${room} tags (EC2 allows ${MAX_TAGS_PER_ENI} per ENI; vpcnet sets the rest)`);
  return tags;
}
