// What the spec says a plugin prints, checked from the outside: the success result of each version,
// the error object and the version object. Independent of src/cni on purpose (a shared bug would
// otherwise pass). Every check throws an AssertionError that names the field at fault.
import assert from 'node:assert/strict';
import { compareVersions, ipsCarryVersion } from './spec-versions.ts';

export interface PluginRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface ResultInterface {
  readonly name: string;
  readonly mac?: string;
  readonly sandbox?: string;
}
export interface ResultIp {
  readonly address: string;
  readonly gateway?: string;
  readonly interface?: number;
  readonly version?: string;
}
export interface ResultRoute {
  readonly dst: string;
  readonly gw?: string;
}
export interface SuccessResult {
  readonly cniVersion: string;
  readonly interfaces?: readonly ResultInterface[];
  readonly ips?: readonly ResultIp[];
  readonly routes?: readonly ResultRoute[];
  readonly dns?: Readonly<Record<string, unknown>>;
}
export interface ErrorObject {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

function describeRun(run: PluginRun): string {
  return `exit ${run.exitCode}, stdout ${JSON.stringify(run.stdout)}, stderr ${JSON.stringify(run.stderr.slice(-400))}`;
}

/** stdout holds exactly one JSON object (surrounding whitespace allowed). */
function singleObject(run: PluginRun): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(run.stdout);
  } catch {
    assert.fail(`stdout is not one JSON document: ${describeRun(run)}`);
  }
  assert.ok(
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed),
    `stdout is not a JSON object: ${describeRun(run)}`,
  );
  return parsed as Record<string, unknown>;
}

function keysWithin(obj: object, allowed: readonly string[], where: string): void {
  const extra = Object.keys(obj).filter((k) => !allowed.includes(k));
  assert.deepEqual(extra, [], `${where} has keys its spec version does not define: ${extra.join(', ')}`);
}

/** Success with nothing printed: DEL, CHECK, GC and STATUS. */
export function expectQuietSuccess(run: PluginRun): void {
  assert.equal(run.exitCode, 0, `expected success: ${describeRun(run)}`);
  assert.equal(run.stdout.trim(), '', `expected no output on success: ${describeRun(run)}`);
}

/** An ADD result: exit 0, one object, `cniVersion` equal to the input's. */
export function expectResult(run: PluginRun, version: string): SuccessResult {
  assert.equal(run.exitCode, 0, `ADD failed: ${describeRun(run)}`);
  const obj = singleObject(run);
  assert.equal(obj.cniVersion, version, 'result cniVersion differs from the configuration cniVersion');
  return obj as unknown as SuccessResult;
}

const INTERFACE_KEYS = ['name', 'mac', 'sandbox'];
const INTERFACE_KEYS_110 = [...INTERFACE_KEYS, 'mtu', 'socketPath', 'pciID'];
const ROUTE_KEYS = ['dst', 'gw'];
const ROUTE_KEYS_110 = [...ROUTE_KEYS, 'mtu', 'advmss', 'priority', 'table', 'scope'];

/**
 * The result carries only fields its version defines, each of the right type: `version` on every
 * IP for 0.3.x/0.4.0 and on none from 1.0.0; the 1.1.0 interface and route fields only at 1.1.0;
 * every `interface` an index into `interfaces`.
 */
export function checkResultShape(result: SuccessResult, version: string): void {
  const is110 = compareVersions(version, '1.1.0') >= 0;
  keysWithin(result, ['cniVersion', 'interfaces', 'ips', 'routes', 'dns'], 'result');
  const interfaces = result.interfaces ?? [];
  assert.ok(Array.isArray(interfaces), 'result.interfaces is not an array');
  interfaces.forEach((iface, i) => {
    keysWithin(iface, is110 ? INTERFACE_KEYS_110 : INTERFACE_KEYS, `result.interfaces[${i}]`);
    assert.equal(typeof iface.name, 'string', `result.interfaces[${i}].name is not a string`);
    if (iface.mac !== undefined) assert.match(iface.mac, /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/);
  });
  const ips = result.ips ?? [];
  assert.ok(Array.isArray(ips), 'result.ips is not an array');
  ips.forEach((ip, i) => {
    const where = `result.ips[${i}]`;
    keysWithin(
      ip,
      ipsCarryVersion(version)
        ? ['version', 'address', 'gateway', 'interface']
        : ['address', 'gateway', 'interface'],
      where,
    );
    assert.match(ip.address, /^\d+\.\d+\.\d+\.\d+\/\d+$/, `${where}.address is not an IPv4 CIDR`);
    if (ipsCarryVersion(version)) assert.equal(ip.version, '4', `${where}.version must be "4" at ${version}`);
    if (ip.interface !== undefined) {
      assert.ok(
        Number.isInteger(ip.interface) && ip.interface >= 0 && ip.interface < interfaces.length,
        `${where}.interface ${ip.interface} is no index into interfaces (${interfaces.length} entries)`,
      );
    }
  });
  (result.routes ?? []).forEach((route, i) => {
    keysWithin(route, is110 ? ROUTE_KEYS_110 : ROUTE_KEYS, `result.routes[${i}]`);
    assert.equal(typeof route.dst, 'string', `result.routes[${i}].dst is not a string`);
  });
}

/**
 * A failure as the spec shapes it: non-zero exit; stdout exactly one error object with `code`
 * (an integer), `msg` (non-empty), optional `details`, nothing else, and `cniVersion` equal to the
 * input's when the input named one.
 */
export function expectFailure(run: PluginRun, version?: string): ErrorObject {
  assert.notEqual(run.exitCode, 0, `expected failure: ${describeRun(run)}`);
  const obj = singleObject(run);
  keysWithin(obj, ['cniVersion', 'code', 'msg', 'details'], 'error object');
  assert.ok(Number.isInteger(obj.code), `error code is not an integer: ${describeRun(run)}`);
  assert.equal(typeof obj.msg, 'string', 'error msg is not a string');
  assert.notEqual(obj.msg, '', 'error msg is empty');
  if (obj.details !== undefined) assert.equal(typeof obj.details, 'string', 'error details is not a string');
  assert.equal(typeof obj.cniVersion, 'string', 'error object has no cniVersion');
  if (version !== undefined) assert.equal(obj.cniVersion, version, 'error cniVersion differs from the input');
  return obj as unknown as ErrorObject;
}

/** `expectFailure` with the error code `code`. */
export function expectError(run: PluginRun, code: number, version?: string): ErrorObject {
  const err = expectFailure(run, version);
  assert.equal(err.code, code, `expected code ${code}: ${describeRun(run)}`);
  return err;
}

/** The error's text (msg and details) contains `needle`, literally. */
export function expectNamed(err: ErrorObject, needle: string): void {
  const text = `${err.msg} ${err.details ?? ''}`;
  assert.ok(text.includes(needle), `error does not name ${JSON.stringify(needle)}: ${text}`);
}

/** The VERSION answer: `cniVersion` and `supportedVersions`, nothing else. */
export function expectVersionAnswer(run: PluginRun): { cniVersion: string; supportedVersions: string[] } {
  assert.equal(run.exitCode, 0, `VERSION failed: ${describeRun(run)}`);
  const obj = singleObject(run);
  keysWithin(obj, ['cniVersion', 'supportedVersions'], 'version answer');
  assert.equal(typeof obj.cniVersion, 'string', 'version answer has no cniVersion');
  assert.ok(Array.isArray(obj.supportedVersions), 'version answer has no supportedVersions list');
  return obj as { cniVersion: string; supportedVersions: string[] };
}
