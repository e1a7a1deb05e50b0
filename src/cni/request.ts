// One CNI invocation (CNI_* environment + stdin) parsed and validated into a typed request.
// Pure: whether CNI_NETNS exists on disk is for the agent to find out.
import { type PodIdentity, parseCniArgs, podIdentityFrom } from './cni-args.ts';
import {
  CNI_ERR_INCOMPATIBLE_VERSION,
  CNI_ERR_INVALID_ENV,
  CNI_ERR_INVALID_NETCONF,
  CniError,
} from './errors.ts';
import { ifNameProblem, isValidContainerId } from './identifiers.ts';
import { expectArray, expectObject, requiredString } from './json-fields.ts';
import { type NetConf, parseNetConf } from './netconf.ts';
import { compareVersions } from './versions.ts';

export const CNI_COMMANDS = ['ADD', 'DEL', 'CHECK', 'VERSION', 'GC', 'STATUS'] as const;
export type CniCommand = (typeof CNI_COMMANDS)[number];

/** Same shape as the ledger's AttachmentKey: (network name, container ID, ifName). */
export interface CniAttachmentKey {
  readonly network: string;
  readonly containerId: string;
  readonly ifName: string;
}

/** What ADD, DEL and CHECK share: they act on one attachment. */
interface AttachmentRequestFields {
  readonly netConf: NetConf;
  readonly key: CniAttachmentKey;
  /** CNI_ARGS as a map. */
  readonly args: ReadonlyMap<string, string>;
  /** From CNI_ARGS; undefined outside Kubernetes. */
  readonly pod?: PodIdentity;
  /** CNI_PATH split on ':' (vpcnet delegates to no plugin, so it may be empty). */
  readonly cniPath: readonly string[];
}

export interface AddRequest extends AttachmentRequestFields {
  readonly command: 'ADD';
  readonly netns: string;
}

export interface CheckRequest extends AttachmentRequestFields {
  readonly command: 'CHECK';
  readonly netns: string;
}

export interface DelRequest extends AttachmentRequestFields {
  readonly command: 'DEL';
  /** containerd sends an empty CNI_NETNS on a repeated DEL; the sandbox may be gone. */
  readonly netns?: string;
}

export interface VersionRequest {
  readonly command: 'VERSION';
  /** The version the runtime speaks, when stdin names one. */
  readonly cniVersion?: string;
}

/** One attachment the runtime still uses (GC must keep it). */
export interface GcValidAttachment {
  readonly containerId: string;
  readonly ifName: string;
}

export interface GcRequest {
  readonly command: 'GC';
  readonly netConf: NetConf;
  readonly validAttachments: readonly GcValidAttachment[];
}

export interface StatusRequest {
  readonly command: 'STATUS';
  readonly netConf: NetConf;
}

export type CniRequest = AddRequest | DelRequest | CheckRequest | VersionRequest | GcRequest | StatusRequest;

// The first spec version that defines each command; older configs must not use it.
const INTRODUCED_IN: Readonly<Record<CniCommand, string>> = {
  ADD: '0.1.0',
  DEL: '0.1.0',
  VERSION: '0.1.0',
  CHECK: '0.4.0',
  GC: '1.1.0',
  STATUS: '1.1.0',
};

type Env = Readonly<Record<string, string | undefined>>;

/** Throws CniError with the spec's code for the first problem found (env first, then stdin). */
export function parseCniRequest(env: Env, stdin: string): CniRequest {
  const command = parseCommand(env.CNI_COMMAND);
  if (command === 'VERSION') return parseVersion(stdin);

  if (command === 'GC' || command === 'STATUS') {
    const netConf = parseNetConf(stdin);
    requireVersionFor(command, netConf);
    if (command === 'STATUS') return { command, netConf };
    return { command, netConf, validAttachments: parseValidAttachments(netConf) };
  }

  // ADD, DEL, CHECK: validate the environment before stdin, as libcni's skel does.
  const containerId = requiredEnv(env, 'CNI_CONTAINERID');
  if (!isValidContainerId(containerId)) {
    throw new CniError(
      CNI_ERR_INVALID_ENV,
      `invalid CNI_CONTAINERID "${containerId}"`,
      'must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$',
    );
  }
  const ifName = requiredEnv(env, 'CNI_IFNAME');
  const ifProblem = ifNameProblem(ifName);
  if (ifProblem !== undefined) {
    throw new CniError(CNI_ERR_INVALID_ENV, `invalid CNI_IFNAME "${ifName}": ${ifProblem}`);
  }
  // DEL may come without a netns (containerd's repeated DEL); ADD and CHECK need one.
  const netns = nonEmpty(env.CNI_NETNS);
  if (netns === undefined && command !== 'DEL') throw netnsRequired();
  const args = parseCniArgs(env.CNI_ARGS);
  const pod = podIdentityFrom(args);
  const cniPath = (env.CNI_PATH ?? '').split(':').filter((p) => p !== '');

  const netConf = parseNetConf(stdin);
  requireVersionFor(command, netConf);
  const key = { network: netConf.name, containerId, ifName };
  const common = pod === undefined ? { netConf, key, args, cniPath } : { netConf, key, args, pod, cniPath };

  if (command === 'DEL') return netns === undefined ? { command, ...common } : { command, ...common, netns };
  if (netns === undefined) throw netnsRequired();
  return { command, ...common, netns };
}

function parseCommand(raw: string | undefined): CniCommand {
  if (raw === undefined || raw === '') throw new CniError(CNI_ERR_INVALID_ENV, 'CNI_COMMAND is required');
  const known = CNI_COMMANDS.find((c) => c === raw);
  if (known === undefined) {
    throw new CniError(
      CNI_ERR_INVALID_ENV,
      `unknown CNI_COMMAND "${raw}"`,
      `known: ${CNI_COMMANDS.join(', ')}`,
    );
  }
  return known;
}

function requiredEnv(env: Env, name: string): string {
  const v = env[name];
  if (v === undefined || v === '') throw new CniError(CNI_ERR_INVALID_ENV, `${name} is required`);
  return v;
}

function netnsRequired(): CniError {
  return new CniError(CNI_ERR_INVALID_ENV, 'CNI_NETNS is required');
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v === '' ? undefined : v;
}

function requireVersionFor(command: CniCommand, netConf: NetConf): void {
  const since = INTRODUCED_IN[command];
  if (compareVersions(netConf.cniVersion, since) < 0) {
    throw new CniError(
      CNI_ERR_INCOMPATIBLE_VERSION,
      `CNI version ${netConf.cniVersion} does not allow ${command}`,
      `${command} needs ${since} or later`,
    );
  }
}

/** VERSION must answer even a runtime whose version we do not speak, so stdin is read leniently. */
function parseVersion(stdin: string): VersionRequest {
  if (stdin.trim() === '') return { command: 'VERSION' };
  try {
    const decoded: unknown = JSON.parse(stdin);
    if (typeof decoded === 'object' && decoded !== null && 'cniVersion' in decoded) {
      const v = decoded.cniVersion;
      if (typeof v === 'string' && v !== '') return { command: 'VERSION', cniVersion: v };
    }
  } catch {
    // An unreadable stdin still gets the list of versions we speak.
  }
  return { command: 'VERSION' };
}

// The list's key: the 1.1.0 spec tag says `cni.dev/attachments`, later text and libcni say
// `cni.dev/valid-attachments`, and some libcni versions send only one of them.
const VALID_ATTACHMENTS_KEY = 'cni.dev/valid-attachments';
const ATTACHMENTS_KEY = 'cni.dev/attachments';

function parseValidAttachments(netConf: NetConf): readonly GcValidAttachment[] {
  const key = netConf.raw[VALID_ATTACHMENTS_KEY] !== undefined ? VALID_ATTACHMENTS_KEY : ATTACHMENTS_KEY;
  const raw = netConf.raw[key];
  // Without the list every attachment would look like garbage; refuse instead of guessing.
  if (raw === undefined) {
    throw new CniError(
      CNI_ERR_INVALID_NETCONF,
      `GC needs config["${VALID_ATTACHMENTS_KEY}"] (or config["${ATTACHMENTS_KEY}"])`,
    );
  }
  const path = `config["${key}"]`;
  return expectArray(raw, path, CNI_ERR_INVALID_NETCONF).map((item, i) => {
    const p = `${path}[${i}]`;
    const o = expectObject(item, p, CNI_ERR_INVALID_NETCONF);
    return {
      containerId: requiredString(o, 'containerID', p, CNI_ERR_INVALID_NETCONF),
      ifName: requiredString(o, 'ifname', p, CNI_ERR_INVALID_NETCONF),
    };
  });
}
