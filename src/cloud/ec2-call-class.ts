// What an EC2 call is for, so that the agent's budget serves the calls that matter first: an ADD
// waiting for an address goes before the pool's warm top-ups, those before describes, sweeps and
// releases. The caller says it for the calls it makes (an async context, so the Cloud interface
// stays as it is); a call made outside any context is classed by its action.
import { AsyncLocalStorage } from 'node:async_hooks';

/** Most urgent first. */
export type Ec2CallClass = 'demand' | 'grow' | 'read' | 'sweep' | 'release';

export const EC2_CALL_CLASSES: readonly Ec2CallClass[] = ['demand', 'grow', 'read', 'sweep', 'release'];

const context = new AsyncLocalStorage<Ec2CallClass>();

/** Runs `work`; the EC2 calls it makes (and those its callbacks make) are of class `cls`. */
export function asEc2Class<T>(cls: Ec2CallClass, work: () => Promise<T>): Promise<T> {
  return context.run(cls, work);
}

/** Actions that give something back to EC2: never sent while EC2 throttles this agent. */
const RELEASE_ACTIONS: ReadonlySet<string> = new Set([
  'UnassignPrivateIpAddresses',
  'UnassignIpv6Addresses',
  'DetachNetworkInterface',
  'DeleteNetworkInterface',
]);

/** The class of a call of `action` made now: the caller's, else what the action is. */
export function ec2CallClass(action: string): Ec2CallClass {
  // A release stays a release whoever asks: an ADD never waits for one.
  if (RELEASE_ACTIONS.has(action)) return 'release';
  const given = context.getStore();
  if (given !== undefined) return given;
  return /^(Describe|Get|List)/.test(action) ? 'read' : 'grow';
}

export function isReleaseAction(action: string): boolean {
  return RELEASE_ACTIONS.has(action);
}

/**
 * Actions that finish what an earlier call began (attach and mark the ENI just created, delete the
 * one just detached): the fleet's pace spaces the calls that begin something, not these, so that
 * no ENI waits minutes between its creation and its attachment, or detached before its deletion.
 */
const FOLLOW_UP_ACTIONS: ReadonlySet<string> = new Set([
  'AttachNetworkInterface',
  'ModifyNetworkInterfaceAttribute',
  'DeleteNetworkInterface',
  'CreateTags',
]);

export function isFollowUpAction(action: string): boolean {
  return FOLLOW_UP_ACTIONS.has(action);
}
