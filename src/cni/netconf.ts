// The network configuration a runtime passes on stdin, parsed once into a typed NetConf.
import {
  CNI_ERR_DECODE,
  CNI_ERR_INCOMPATIBLE_VERSION,
  CniError,
  CNI_ERR_INVALID_NETCONF as CODE,
} from './errors.ts';
import { isValidNetworkName } from './identifiers.ts';
import {
  expectObject,
  isJsonObject,
  type JsonObject,
  optionalInteger,
  optionalString,
  requiredString,
} from './json-fields.ts';
import { parsePrevResult } from './prev-result.ts';
import type { CniResult } from './result.ts';
import { isSupportedVersion, SUPPORTED_CNI_VERSIONS } from './versions.ts';

export type PodSgEnforcingMode = 'strict' | 'standard';

export interface NetConf {
  readonly cniVersion: string;
  readonly name: string;
  readonly type: string;
  readonly mtu?: number;
  readonly agentSocket?: string;
  readonly vethPrefix?: string;
  readonly podSGEnforcingMode?: PodSgEnforcingMode;
  readonly delSpoolDir?: string;
  readonly prevResult?: CniResult;
  readonly runtimeConfig?: JsonObject;
  /** The whole decoded object, for keys this type does not name (e.g. GC's valid attachments). */
  readonly raw: JsonObject;
}

const MIN_MTU = 68; // IPv4 minimum (RFC 791)
const MAX_MTU = 65535;
// The host veth name is prefix + a hash of the attachment key and must fit IFNAMSIZ.
const MAX_VETH_PREFIX_LENGTH = 4;
// Host names of this kind belong to other things; a pod veth must not look like one.
const RESERVED_VETH_PREFIXES = ['eth', 'lo', 'vlan'];

export function parseNetConf(stdin: string): NetConf {
  let decoded: unknown;
  try {
    decoded = JSON.parse(stdin);
  } catch (err) {
    throw new CniError(CNI_ERR_DECODE, 'failed to decode network configuration', (err as Error).message);
  }
  if (!isJsonObject(decoded))
    throw new CniError(CNI_ERR_DECODE, 'network configuration must be a JSON object');
  const raw = decoded;
  const path = 'config';

  const cniVersion = raw.cniVersion;
  if (cniVersion === undefined || cniVersion === '') {
    throw new CniError(CNI_ERR_INCOMPATIBLE_VERSION, 'config.cniVersion is required', supportedList());
  }
  if (typeof cniVersion !== 'string') throw new CniError(CODE, 'config.cniVersion must be a string');
  if (!isSupportedVersion(cniVersion)) {
    throw new CniError(
      CNI_ERR_INCOMPATIBLE_VERSION,
      `unsupported CNI version ${cniVersion}`,
      supportedList(),
    );
  }

  const name = requiredString(raw, 'name', path, CODE);
  if (!isValidNetworkName(name)) {
    throw new CniError(CODE, `invalid network name "${name}"`, 'must match ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$');
  }

  const conf: {
    cniVersion: string;
    name: string;
    type: string;
    mtu?: number;
    agentSocket?: string;
    vethPrefix?: string;
    podSGEnforcingMode?: PodSgEnforcingMode;
    delSpoolDir?: string;
    prevResult?: CniResult;
    runtimeConfig?: JsonObject;
    raw: JsonObject;
  } = { cniVersion, name, type: requiredString(raw, 'type', path, CODE), raw };

  const mtu = optionalInteger(raw, 'mtu', path, CODE);
  if (mtu !== undefined) {
    if (mtu < MIN_MTU || mtu > MAX_MTU)
      throw new CniError(CODE, `config.mtu ${mtu} is outside ${MIN_MTU}–${MAX_MTU}`);
    conf.mtu = mtu;
  }
  const agentSocket = optionalString(raw, 'agentSocket', path, CODE);
  if (agentSocket !== undefined) conf.agentSocket = absolutePath(agentSocket, 'agentSocket');
  const vethPrefix = optionalString(raw, 'vethPrefix', path, CODE);
  if (vethPrefix !== undefined) conf.vethPrefix = checkVethPrefix(vethPrefix);
  const mode = optionalString(raw, 'podSGEnforcingMode', path, CODE);
  if (mode !== undefined) {
    if (mode !== 'strict' && mode !== 'standard') {
      throw new CniError(CODE, `config.podSGEnforcingMode must be "strict" or "standard", not "${mode}"`);
    }
    conf.podSGEnforcingMode = mode;
  }
  const delSpoolDir = optionalString(raw, 'delSpoolDir', path, CODE);
  if (delSpoolDir !== undefined) conf.delSpoolDir = absolutePath(delSpoolDir, 'delSpoolDir');
  if (raw.prevResult !== undefined) conf.prevResult = parsePrevResult(raw.prevResult, 'config.prevResult');
  if (raw.runtimeConfig !== undefined) {
    conf.runtimeConfig = expectObject(raw.runtimeConfig, 'config.runtimeConfig', CODE);
  }
  return conf;
}

function supportedList(): string {
  return `supported: ${SUPPORTED_CNI_VERSIONS.join(', ')}`;
}

function absolutePath(value: string, key: string): string {
  if (!value.startsWith('/'))
    throw new CniError(CODE, `config.${key} must be an absolute path, not "${value}"`);
  return value;
}

function checkVethPrefix(prefix: string): string {
  if (!/^[a-zA-Z0-9]+$/.test(prefix) || prefix.length > MAX_VETH_PREFIX_LENGTH) {
    throw new CniError(
      CODE,
      `config.vethPrefix "${prefix}" must be 1–${MAX_VETH_PREFIX_LENGTH} letters or digits`,
    );
  }
  if (RESERVED_VETH_PREFIXES.includes(prefix)) {
    throw new CniError(
      CODE,
      `config.vethPrefix "${prefix}" is reserved`,
      `reserved: ${RESERVED_VETH_PREFIXES.join(', ')}`,
    );
  }
  return prefix;
}
