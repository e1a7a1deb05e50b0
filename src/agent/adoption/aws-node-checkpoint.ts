// aws-node's IPAM checkpoint (ipamd's `/var/run/aws-node/ipam.json`): which sandbox holds which
// address, as ipamd last wrote it. Adoption reads it once, on a first start, as a list of claims to
// be confirmed against the kernel: the file is aws-node's, not vpcnet's, and it may be stale (pods
// deleted while no agent ran) or damaged. An entry that does not parse is skipped with its reason;
// a file whose version is not ipamd's is refused whole.
import { open } from 'node:fs/promises';
import { isIPv4, isIPv6 } from 'node:net';

/** The version stamp ipamd writes (datastore.CheckpointFormatVersion). */
export const AWS_NODE_CHECKPOINT_VERSION = 'vpc-cni-ipam/1';

/** A node holds at most a few hundred pods; a file far larger than that many entries is not ipamd's. */
export const AWS_NODE_CHECKPOINT_MAX_BYTES = 4 * 1024 * 1024;

export interface AwsNodeAllocation {
  readonly networkName: string;
  readonly containerId: string;
  readonly ifName: string;
  readonly ipv4?: string;
  readonly ipv6?: string;
  /** ms since epoch (ipamd writes nanoseconds). */
  readonly allocatedAt: number;
  readonly namespace?: string;
  readonly name?: string;
  /** ipamd's interfacesCount: more than 1 is a pod with several network cards' interfaces. */
  readonly interfacesCount: number;
}

export interface AwsNodeCheckpoint {
  readonly allocations: readonly AwsNodeAllocation[];
  /** Entries that could not be read, each with why (index in the file's `allocations`). */
  readonly skipped: readonly { readonly index: number; readonly reason: string }[];
}

export class AwsNodeCheckpointError extends Error {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`aws-node checkpoint ${path}: ${problem}`);
    this.name = 'AwsNodeCheckpointError';
  }
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optString(o: Obj, name: string): string | undefined {
  const v = o[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw new Error(`${name} is not a string`);
  return v;
}

function requiredString(o: Obj, name: string): string {
  const v = optString(o, name);
  if (v === undefined) throw new Error(`${name} is missing`);
  return v;
}

function allocation(v: unknown): AwsNodeAllocation {
  if (!isObj(v)) throw new Error('not an object');
  const ipv4 = optString(v, 'ipv4');
  const ipv6 = optString(v, 'ipv6');
  if (ipv4 !== undefined && !isIPv4(ipv4))
    throw new Error(`ipv4 ${JSON.stringify(ipv4)} is not an IPv4 address`);
  if (ipv6 !== undefined && !isIPv6(ipv6))
    throw new Error(`ipv6 ${JSON.stringify(ipv6)} is not an IPv6 address`);
  if (ipv4 === undefined && ipv6 === undefined) throw new Error('neither ipv4 nor ipv6');
  const stamp = v.allocationTimestamp;
  if (typeof stamp !== 'number' || !Number.isFinite(stamp) || stamp < 0)
    throw new Error('allocationTimestamp is not a non-negative number');
  const meta = v.metadata === undefined ? {} : v.metadata;
  if (!isObj(meta)) throw new Error('metadata is not an object');
  const count = meta.interfacesCount;
  if (count !== undefined && (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0))
    throw new Error('metadata.interfacesCount is not a count');
  const namespace = optString(meta, 'k8sPodNamespace');
  const name = optString(meta, 'k8sPodName');
  return {
    networkName: requiredString(v, 'networkName'),
    containerId: requiredString(v, 'containerID'),
    ifName: requiredString(v, 'ifName'),
    ...(ipv4 === undefined ? {} : { ipv4 }),
    ...(ipv6 === undefined ? {} : { ipv6 }),
    allocatedAt: Math.floor(stamp / 1e6),
    ...(namespace === undefined ? {} : { namespace }),
    ...(name === undefined ? {} : { name }),
    // ipamd leaves it out (omitempty) for the single interface of an ordinary pod.
    interfacesCount: typeof count === 'number' && count > 0 ? count : 1,
  };
}

/** Parses the checkpoint's text; throws AwsNodeCheckpointError when the file as a whole is not ipamd's. */
export function parseAwsNodeCheckpoint(path: string, text: string): AwsNodeCheckpoint {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AwsNodeCheckpointError(path, `not JSON (${(err as Error).message})`);
  }
  if (!isObj(json)) throw new AwsNodeCheckpointError(path, 'not a JSON object');
  if (json.version !== AWS_NODE_CHECKPOINT_VERSION) {
    throw new AwsNodeCheckpointError(
      path,
      `version ${JSON.stringify(json.version)}, expected ${JSON.stringify(AWS_NODE_CHECKPOINT_VERSION)}`,
    );
  }
  // ipamd writes `null` for a node without pods (an empty Go slice marshals as []: both occur).
  const raw = json.allocations ?? [];
  if (!Array.isArray(raw)) throw new AwsNodeCheckpointError(path, 'allocations is not an array');
  const allocations: AwsNodeAllocation[] = [];
  const skipped: { index: number; reason: string }[] = [];
  for (const [index, entry] of raw.entries()) {
    try {
      allocations.push(allocation(entry));
    } catch (err) {
      skipped.push({ index, reason: (err as Error).message });
    }
  }
  return { allocations, skipped };
}

/**
 * Reads and parses the checkpoint at `path`; undefined when there is none (aws-node never ran on
 * this node, or its files were cleared by a reboot).
 */
export async function readAwsNodeCheckpoint(path: string): Promise<AwsNodeCheckpoint | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AwsNodeCheckpointError(path, `cannot open: ${(err as Error).message}`);
  }
  try {
    // Read at most one byte past the bound: a file that grows while it is read is still bounded.
    const buf = Buffer.alloc(AWS_NODE_CHECKPOINT_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, length, buf.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buf.length) {
        throw new AwsNodeCheckpointError(
          path,
          `more than the ${AWS_NODE_CHECKPOINT_MAX_BYTES} bytes an IPAM checkpoint can need`,
        );
      }
    }
    return parseAwsNodeCheckpoint(path, buf.subarray(0, length).toString('utf8'));
  } finally {
    await handle.close();
  }
}
