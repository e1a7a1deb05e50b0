// The admin API (JSON): the parts of AWS the agent never calls — launching and terminating
// instances, fault injection — and a dump of the state for tests and the lab.
import { errorText } from '../infra/error-text.ts';
import { changeEniAddresses, preAttachEni } from './admin-enis.ts';
import { addEniConfig, addSubnet, changeSubnetTags } from './admin-subnets.ts';
import { handleTenantRoute } from './admin-tenants.ts';
import type { FaultSettings, LaunchInstanceRequest } from './api.ts';
import type { PodEniRequest } from './controller/branch-controller.ts';
import { ControllerError } from './controller/names.ts';
import type { ResourceController } from './controller/resource-controller.ts';
import type { IamRole } from './ec2/authorization.ts';
import type { Ec2CallCounts } from './ec2/call-counts.ts';
import type { Ec2CallRates } from './ec2/call-rates.ts';
import { Ec2Error } from './ec2/error.ts';
import { mergeThrottling, type RequestThrottling } from './ec2/request-throttling.ts';
import type { FaultInjector } from './faults.ts';
import { type HttpReply, jsonReply } from './http-reply.ts';
import { parseIamPolicy } from './iam/iam-policy.ts';
import type { ObjectStore } from './kube/object-store.ts';
import { connectionTrackingOf } from './vpc/connection-tracking.ts';
import type { MetadataOptions } from './vpc/metadata-options.ts';
import type { VpcOperations } from './vpc/operations.ts';

export interface AdminDeps {
  readonly ops: VpcOperations;
  readonly faults: FaultInjector;
  readonly controller: ResourceController;
  readonly calls?: Ec2CallCounts;
  /** The Kubernetes slice's ENIConfigs (POST /admin/eniconfigs). */
  readonly eniConfigs?: ObjectStore;
  /** EC2's request rate limits (PUT/GET /admin/throttling) and the calls per second (GET /admin/ec2-rates). */
  readonly throttling?: RequestThrottling;
  readonly rates?: Ec2CallRates;
  /** The instance role whose policy PUT /admin/iam-policy sets. */
  readonly iam?: IamRole;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function optionalStrings(v: unknown, name: string): readonly string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
    throw new Error(`${name} must be a string array`);
  return v;
}

function optionalString(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new Error(`${name} must be a string`);
  return v;
}

function optionalNumber(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number') throw new Error(`${name} must be a number`);
  return v;
}

export function parseLaunchRequest(v: unknown): LaunchInstanceRequest {
  if (!isRecord(v)) throw new Error('body must be a JSON object');
  const { instanceType, subnetId } = v;
  if (typeof instanceType !== 'string' || typeof subnetId !== 'string') {
    throw new Error('instanceType and subnetId are required strings');
  }
  const securityGroupIds = optionalStrings(v.securityGroupIds, 'securityGroupIds');
  const netns = optionalString(v.netns, 'netns');
  const nodeName = optionalString(v.nodeName, 'nodeName');
  const connectionTracking = launchConnectionTracking(v.connectionTracking);
  const imdsSourceAddress = optionalString(v.imdsSourceAddress, 'imdsSourceAddress');
  return {
    instanceType,
    subnetId,
    ...(securityGroupIds === undefined ? {} : { securityGroupIds }),
    ...(netns === undefined ? {} : { netns }),
    ...(nodeName === undefined ? {} : { nodeName }),
    ...(connectionTracking === undefined ? {} : { connectionTracking }),
    ...(imdsSourceAddress === undefined ? {} : { imdsSourceAddress }),
  };
}

/** `{ tcpEstablishedTimeout?, udpStreamTimeout?, udpTimeout? }` of a launch, EC2's bounds checked. */
function launchConnectionTracking(v: unknown) {
  if (v === undefined) return undefined;
  if (!isRecord(v)) throw new Error('connectionTracking must be a JSON object');
  const prefix = 'connectionTracking';
  return connectionTrackingOf(prefix, (wire) => {
    const name = wire.slice(prefix.length + 1);
    const key = name.charAt(0).toLowerCase() + name.slice(1);
    return optionalNumber(v[key], `${prefix}.${key}`);
  });
}

export function parsePodEniRequest(v: unknown): PodEniRequest {
  if (!isRecord(v)) throw new Error('body must be a JSON object');
  const { namespace, name } = v;
  if (typeof namespace !== 'string' || namespace === '' || typeof name !== 'string' || name === '') {
    throw new Error('namespace and name are required strings');
  }
  const securityGroupIds = optionalStrings(v.securityGroupIds, 'securityGroupIds') ?? [];
  if (securityGroupIds.length === 0)
    throw new Error('securityGroupIds must name at least one security group');
  return { namespace, name, securityGroupIds };
}

export function parseFaultSettings(v: unknown): FaultSettings {
  if (!isRecord(v)) throw new Error('body must be a JSON object');
  const throttleRate = optionalNumber(v.throttleRate, 'throttleRate');
  const errorRate = optionalNumber(v.errorRate, 'errorRate');
  const replyLostRate = optionalNumber(v.replyLostRate, 'replyLostRate');
  const latencyMs = optionalNumber(v.latencyMs, 'latencyMs');
  const staleReadMs = optionalNumber(v.staleReadMs, 'staleReadMs');
  const imdsStaleReadMs = optionalNumber(v.imdsStaleReadMs, 'imdsStaleReadMs');
  const pageItems = optionalNumber(v.pageItems, 'pageItems');
  const actions = optionalStrings(v.actions, 'actions');
  if (v.imds !== undefined && typeof v.imds !== 'boolean') throw new Error('imds must be a boolean');
  return {
    ...(throttleRate === undefined ? {} : { throttleRate }),
    ...(errorRate === undefined ? {} : { errorRate }),
    ...(replyLostRate === undefined ? {} : { replyLostRate }),
    ...(latencyMs === undefined ? {} : { latencyMs }),
    ...(staleReadMs === undefined ? {} : { staleReadMs }),
    ...(imdsStaleReadMs === undefined ? {} : { imdsStaleReadMs }),
    ...(pageItems === undefined ? {} : { pageItems }),
    ...(actions === undefined ? {} : { actions }),
    ...(v.imds === undefined ? {} : { imds: v.imds }),
  };
}

/** `{ httpEndpoint?, httpTokens?, httpPutResponseHopLimit? }`: what ModifyInstanceMetadataOptions takes. */
function parseMetadataOptions(v: unknown): Partial<MetadataOptions> {
  if (!isRecord(v)) throw new Error('body must be a JSON object');
  const endpoint = optionalString(v.httpEndpoint, 'httpEndpoint');
  const tokens = optionalString(v.httpTokens, 'httpTokens');
  const hops = optionalNumber(v.httpPutResponseHopLimit, 'httpPutResponseHopLimit');
  return {
    ...(endpoint === undefined ? {} : { httpEndpoint: endpoint as MetadataOptions['httpEndpoint'] }),
    ...(tokens === undefined ? {} : { httpTokens: tokens as MetadataOptions['httpTokens'] }),
    ...(hops === undefined ? {} : { httpPutResponseHopLimit: hops }),
  };
}

/**
 * The instance role's policy: PUT /admin/iam-policy with a policy document (its statements decide
 * every EC2, STS and IAM call after it), or `{}` to allow everything again; GET shows it.
 */
function handleIamAdmin(
  method: string,
  path: string,
  parsed: unknown,
  iam: IamRole | undefined,
): HttpReply | undefined {
  if (path !== '/admin/iam-policy' || iam === undefined) return undefined;
  if (method === 'GET') return jsonReply(200, { policy: iam.policy?.document ?? null });
  if (method !== 'PUT') return undefined;
  const empty = isRecord(parsed) && Object.keys(parsed).length === 0;
  iam.policy = empty ? undefined : parseIamPolicy(parsed);
  return { status: 204, headers: {}, body: '' };
}

export function stateDump(ops: VpcOperations, calls?: Ec2CallCounts): unknown {
  const state = ops.state;
  return {
    vpc: state.spec,
    vpcCidrs: state.vpcCidrs(),
    instances: state.instances().map((i) => ({
      instanceId: i.instanceId,
      instanceType: i.instanceType,
      subnetId: i.subnetId,
      netns: i.netns ?? null,
      nodeName: i.nodeName ?? null,
      securityGroupIds: i.securityGroupIds,
    })),
    enis: state.enis().map((e) => ({
      eniId: e.eniId,
      mac: e.mac,
      subnetId: e.subnetId,
      primaryIp: e.primaryIp,
      secondaryIps: e.secondaryIps,
      ipv4Prefixes: e.ipv4Prefixes,
      ipv6Addresses: e.ipv6Addresses,
      ipv6Prefixes: e.ipv6Prefixes,
      securityGroupIds: e.securityGroupIds,
      description: e.description,
      tags: Object.fromEntries(e.tags),
      attachment: e.attachment ?? null,
      interfaceType: e.interfaceType,
      trunkAssociation: e.trunkAssociation ?? null,
      connectionTracking: e.connectionTracking ?? null,
    })),
    subnets: state.subnets().map((s) => ({
      subnetId: s.spec.subnetId,
      available: s.availableCount,
      tags: Object.fromEntries(s.tags),
    })),
    // EC2 calls answered since start, per action: { calls, errors }.
    ec2Calls: calls?.snapshot() ?? {},
  };
}

function errorReply(err: unknown): HttpReply {
  if (err instanceof Ec2Error) return jsonReply(err.status, { code: err.code, message: err.message });
  if (err instanceof ControllerError) {
    return jsonReply(err.status, {
      code: err.status === 404 ? 'NotFound' : 'Conflict',
      message: err.message,
    });
  }
  return jsonReply(400, { code: 'BadRequest', message: errorText(err) });
}

/** PUT/GET /admin/throttling and GET /admin/ec2-rates; undefined for any other route. */
function throttlingRoute(
  method: string,
  path: string,
  body: unknown,
  deps: AdminDeps,
): HttpReply | undefined {
  const { throttling, rates } = deps;
  if (path === '/admin/throttling' && throttling !== undefined) {
    if (method === 'PUT') throttling.set(mergeThrottling(throttling.settings, body));
    else if (method !== 'GET') return undefined;
    return jsonReply(200, { settings: throttling.settings, buckets: throttling.state() });
  }
  if (method === 'GET' && path === '/admin/ec2-rates' && rates !== undefined)
    return jsonReply(200, { seconds: rates.since() });
  return undefined;
}

export async function handleAdmin(
  method: string,
  path: string,
  body: string,
  deps: AdminDeps,
): Promise<HttpReply> {
  try {
    const parsed: unknown = body === '' ? {} : JSON.parse(body);
    if (method === 'POST' && path === '/admin/instances') {
      return jsonReply(201, await deps.ops.launch(parseLaunchRequest(parsed)));
    }
    const enisOf = /^\/admin\/instances\/([^/]+)\/enis$/.exec(path);
    if (method === 'POST' && enisOf?.[1] !== undefined) {
      return jsonReply(201, await preAttachEni(deps.ops, decodeURIComponent(enisOf[1]), parsed));
    }
    const addressesOf = /^\/admin\/enis\/([^/]+)\/addresses$/.exec(path);
    if ((method === 'POST' || method === 'DELETE') && addressesOf?.[1] !== undefined) {
      const eniId = decodeURIComponent(addressesOf[1]);
      return jsonReply(200, await changeEniAddresses(deps.ops, eniId, method, parsed));
    }
    const del = /^\/admin\/instances\/([^/]+)$/.exec(path);
    if (method === 'DELETE' && del?.[1] !== undefined) {
      await deps.ops.terminate(decodeURIComponent(del[1]));
      return { status: 204, headers: {}, body: '' };
    }
    if (method === 'POST' && path === '/admin/subnets')
      return jsonReply(201, addSubnet(deps.ops.state, parsed));
    const tags = /^\/admin\/subnets\/([^/]+)\/tags$/.exec(path);
    if (method === 'POST' && tags?.[1] !== undefined) {
      return jsonReply(200, changeSubnetTags(deps.ops.state, decodeURIComponent(tags[1]), parsed));
    }
    if (method === 'POST' && path === '/admin/eniconfigs' && deps.eniConfigs !== undefined) {
      return jsonReply(201, addEniConfig(deps.eniConfigs, parsed));
    }
    const iamAnswer = handleIamAdmin(method, path, parsed, deps.iam);
    if (iamAnswer !== undefined) return iamAnswer;
    const metadataOf = /^\/admin\/instances\/([^/]+)\/metadata-options$/.exec(path);
    if (method === 'POST' && metadataOf?.[1] !== undefined) {
      const instanceId = decodeURIComponent(metadataOf[1]);
      deps.ops.state.instance(instanceId);
      return jsonReply(200, deps.ops.state.metadataOptions.set(instanceId, parseMetadataOptions(parsed)));
    }
    if (method === 'POST' && path === '/admin/security-groups') {
      const g = parsed as { groupId?: unknown; groupName?: unknown; description?: unknown };
      if (typeof g.groupId !== 'string')
        throw new Error('body must be {"groupId": "sg-...", "groupName"?: "..."}');
      const name = typeof g.groupName === 'string' ? g.groupName : g.groupId;
      const description = typeof g.description === 'string' ? g.description : name;
      return jsonReply(
        201,
        deps.ops.state.securityGroups.add({ groupId: g.groupId, groupName: name, description }),
      );
    }
    if (method === 'PUT' && path === '/admin/faults') {
      deps.faults.set(parseFaultSettings(parsed));
      return { status: 204, headers: {}, body: '' };
    }
    const throttling = throttlingRoute(method, path, parsed, deps);
    if (throttling !== undefined) return throttling;
    if (method === 'GET' && path === '/admin/state') return jsonReply(200, stateDump(deps.ops, deps.calls));
    if (method === 'GET' && path === '/admin/traffic')
      return jsonReply(200, { enis: await deps.ops.traffic() });
    // Other tenants of a subnet, CIDR reservations, fragmentation and its ground truth.
    const tenants = handleTenantRoute(deps.ops.state, method, path, parsed);
    if (tenants !== undefined) return jsonReply(tenants.status, tenants.body);
    if (method === 'POST' && path === '/admin/vpc-cidrs') {
      const cidr = (parsed as { cidr?: unknown } | null)?.cidr;
      if (typeof cidr !== 'string') throw new Error('body must be {"cidr": "A.B.C.D/N"}');
      deps.ops.state.associateCidr(cidr);
      return jsonReply(201, { vpcCidrs: deps.ops.state.vpcCidrs() });
    }
    if (method === 'POST' && path === '/admin/pod-eni') {
      return jsonReply(201, await deps.controller.assignPodEni(parsePodEniRequest(parsed)));
    }
    return jsonReply(404, { code: 'NotFound', message: `no admin route ${method} ${path}` });
  } catch (err) {
    return errorReply(err);
  }
}
