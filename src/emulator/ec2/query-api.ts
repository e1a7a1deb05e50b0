// The EC2 Query API endpoint: POST / with a form body, XML replies, EC2's error document and
// status codes, a request ID on every reply, fault injection and one log line per call.

import { errorText } from '../../infra/error-text.ts';
import type { FaultInjector } from '../faults.ts';
import { type HttpReply, sleep } from '../http-reply.ts';
import type { StaleReadHistory } from '../stale-reads.ts';
import type { IdSource } from '../vpc/ids.ts';
import type { VpcOperations } from '../vpc/operations.ts';
import type { VpcView } from '../vpc/view.ts';
import { authorizeCall, callerSession, IamRole, isDryRun } from './authorization.ts';
import type { Ec2CallCounts } from './call-counts.ts';
import type { Ec2CallRates } from './call-rates.ts';
import {
  describeInstances,
  describeInstanceTypes,
  describeNetworkInterfaces,
  describeSubnets,
} from './describe-actions.ts';
import { describeVpcs } from './describe-vpcs.ts';
import {
  assignPrivateIpAddresses,
  attachNetworkInterface,
  createNetworkInterface,
  createTags,
  deleteNetworkInterface,
  deleteTags,
  detachNetworkInterface,
  modifyNetworkInterfaceAttribute,
  unassignPrivateIpAddresses,
} from './eni-actions.ts';
import { Ec2Error } from './error.ts';
import { assignIpv6Addresses, unassignIpv6Addresses } from './ipv6-actions.ts';
import { QueryParams } from './params.ts';
import { bucketOf, type RequestThrottling } from './request-throttling.ts';
import { getSubnetCidrReservations } from './reservation-actions.ts';
import { describeSecurityGroups } from './security-group-actions.ts';
import {
  associateTrunkInterface,
  describeTrunkInterfaceAssociations,
  disassociateTrunkInterface,
} from './trunk-actions.ts';
import { ec2ErrorResponse, ec2Response, type XmlObject } from './xml.ts';

/** `view` is what reads see: the live state, or a past one under the stale-read fault. */
type Action = (p: QueryParams, ops: VpcOperations, view: VpcView) => XmlObject | Promise<XmlObject>;

const ACTIONS: ReadonlyMap<string, Action> = new Map<string, Action>([
  [
    'DescribeInstances',
    (p, ops, view) => describeInstances(p, view, (id) => ops.state.metadataOptions.of(id)),
  ],
  ['DescribeInstanceTypes', (p) => describeInstanceTypes(p)],
  ['DescribeSubnets', (p, _ops, view) => describeSubnets(p, view)],
  ['DescribeVpcs', (p, _ops, view) => describeVpcs(p, view)],
  ['DescribeNetworkInterfaces', (p, _ops, view) => describeNetworkInterfaces(p, view)],
  ['CreateNetworkInterface', createNetworkInterface],
  ['DeleteNetworkInterface', deleteNetworkInterface],
  ['AttachNetworkInterface', attachNetworkInterface],
  ['DetachNetworkInterface', detachNetworkInterface],
  ['ModifyNetworkInterfaceAttribute', modifyNetworkInterfaceAttribute],
  ['AssignPrivateIpAddresses', assignPrivateIpAddresses],
  ['UnassignPrivateIpAddresses', unassignPrivateIpAddresses],
  ['AssignIpv6Addresses', assignIpv6Addresses],
  ['UnassignIpv6Addresses', unassignIpv6Addresses],
  ['CreateTags', createTags],
  ['DeleteTags', deleteTags],
  ['AssociateTrunkInterface', associateTrunkInterface],
  ['DisassociateTrunkInterface', disassociateTrunkInterface],
  ['DescribeTrunkInterfaceAssociations', (p, _ops, view) => describeTrunkInterfaceAssociations(p, view)],
  ['GetSubnetCidrReservations', (p, _ops, view) => getSubnetCidrReservations(p, view)],
  ['DescribeSecurityGroups', (p, ops) => describeSecurityGroups(p, ops)],
]);

/** Every EC2 action the emulator answers. */
export const EMULATED_EC2_ACTIONS: readonly string[] = [...ACTIONS.keys()];

/** The resource IDs a call names, for the log line (what an operator greps for). */
function subjectIds(p: QueryParams): Record<string, string> {
  const out: Record<string, string> = {};
  const names = [
    'NetworkInterfaceId',
    'InstanceId',
    'AttachmentId',
    'SubnetId',
    'AssociationId',
    'TrunkInterfaceId',
  ];
  for (const name of names) {
    const v = p.get(name) ?? p.get(`${name}.1`);
    if (v !== undefined) out[name[0]!.toLowerCase() + name.slice(1)] = v;
  }
  // A describe of one subnet's ENIs (a census) names its subnet by filter.
  const bySubnet = p.filters().get('subnet-id');
  if (out.subnetId === undefined && bySubnet?.length === 1) out.subnetId = bySubnet[0]!;
  return out;
}

export interface Ec2Deps {
  readonly ops: VpcOperations;
  readonly history: StaleReadHistory;
  readonly faults: FaultInjector;
  readonly ids: IdSource;
  readonly log: (line: Record<string, unknown>) => void;
  /** Counts every call by action (GET /admin/state shows them). */
  readonly calls?: Ec2CallCounts;
  /** EC2's request rate limits of the account (absent: none). */
  readonly throttling?: RequestThrottling;
  /** Calls and throttled answers per second (GET /admin/ec2-rates). */
  readonly rates?: Ec2CallRates;
  /** What the caller's role may do (PUT /admin/iam-policy); absent: everything. */
  readonly iam?: IamRole;
}

/** `authorization`: the request's SigV4 header, which names the caller's access key. */
export async function handleEc2(body: string, deps: Ec2Deps, authorization?: string): Promise<HttpReply> {
  const started = performance.now();
  const requestId = deps.ids.requestId();
  const p = new QueryParams(body);
  const action = p.action;
  let status = 200;
  let xml: string;
  let code: string | undefined;
  try {
    if (action === undefined)
      throw new Ec2Error('MissingParameter', 'The request must contain the parameter Action');
    const run = ACTIONS.get(action);
    if (run === undefined)
      throw new Ec2Error('InvalidAction', `The action ${action} is not valid for this web service.`);
    // EC2 counts a request against its bucket before it looks at anything else.
    deps.throttling?.admit(bucketOf(action, p));
    const fault = deps.faults.decide(action);
    if (fault.pageItems !== undefined) p.limitPages(fault.pageItems);
    if (fault.latencyMs > 0) await sleep(fault.latencyMs);
    if (fault.error !== undefined) throw fault.error;
    authorizeCall(deps.iam ?? new IamRole(), action, p, callerSession(authorization));
    xml = ec2Response(action, requestId, await run(p, deps.ops, deps.history.view(fault.staleReadMs)));
    if (fault.replyLost === true) throw new Ec2Error('InternalError', 'An internal error has occurred', 500);
  } catch (err) {
    const e =
      err instanceof Ec2Error ? err : new Ec2Error('InternalError', 'An internal error has occurred', 500);
    if (!(err instanceof Ec2Error)) deps.log({ msg: 'ec2 action crashed', action, error: errorText(err) });
    status = e.status;
    code = e.code;
    xml = ec2ErrorResponse(e.code, e.message, requestId);
  }
  deps.calls?.record(action ?? '(none)', status !== 200, isDryRun(p));
  deps.rates?.record(action ?? '(none)', code === 'RequestLimitExceeded');
  deps.log({
    msg: 'ec2',
    action: action ?? null,
    status,
    ...(code === undefined ? {} : { code }),
    ...(isDryRun(p) ? { dryRun: true } : {}),
    ...subjectIds(p),
    ms: Math.round((performance.now() - started) * 10) / 10,
    requestId,
  });
  return {
    status,
    headers: { 'content-type': 'text/xml;charset=UTF-8', 'x-amzn-requestid': requestId },
    body: xml,
  };
}
