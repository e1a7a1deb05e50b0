// EC2's published request limits per account and region ("Request throttling for the Amazon EC2
// API"): the refill per second of each action's bucket, for the actions the agent calls. What the
// cluster's EC2 throttle Lease divides among the agents; an account whose limits were raised
// only paces its agents more than it must, one whose limits are lower is found out by throttling
// (the Lease's pace factor doubles).
const OWN_BUCKETS: Readonly<Record<string, number>> = {
  AssignIpv6Addresses: 5,
  AssignPrivateIpAddresses: 5,
  CreateNetworkInterface: 5,
  CreateTags: 10,
  DeleteNetworkInterface: 5,
  DeleteTags: 10,
  ModifyNetworkInterfaceAttribute: 5,
  UnassignPrivateIpAddresses: 5,
};

/** Non-mutating actions (Describe*, Get*, List*, Search*): 20 per second. */
const NON_MUTATING_REFILL = 20;
/** Any other mutating action: 5 per second. */
const MUTATING_REFILL = 5;

/** The published refill per second of `action`'s bucket. */
export function publishedRefillPerSecond(action: string): number {
  return (
    OWN_BUCKETS[action] ??
    (/^(Describe|Get|List|Search)/.test(action) ? NON_MUTATING_REFILL : MUTATING_REFILL)
  );
}
