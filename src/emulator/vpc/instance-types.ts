// Network limits of the instance types the emulator can launch (ENI and address figures as EC2
// publishes them; branch-ENI figures as the VPC resource controller's table has them).

export interface NetworkLimits {
  readonly maxEnis: number;
  /** IPv4 addresses per ENI, the primary included. */
  readonly ipsPerEni: number;
  /** Branch ENIs (pods with their own security groups) on the instance's trunk; 0: no trunking. */
  readonly maxBranchEnis: number;
}

const LIMITS: ReadonlyMap<string, NetworkLimits> = new Map([
  ['t3.medium', { maxEnis: 3, ipsPerEni: 6, maxBranchEnis: 0 }],
  ['t3.large', { maxEnis: 3, ipsPerEni: 12, maxBranchEnis: 0 }],
  ['m5.large', { maxEnis: 3, ipsPerEni: 10, maxBranchEnis: 9 }],
  ['m5.xlarge', { maxEnis: 4, ipsPerEni: 15, maxBranchEnis: 18 }],
  ['m5.2xlarge', { maxEnis: 4, ipsPerEni: 15, maxBranchEnis: 38 }],
  ['m5.4xlarge', { maxEnis: 8, ipsPerEni: 30, maxBranchEnis: 54 }],
  ['c5.large', { maxEnis: 3, ipsPerEni: 10, maxBranchEnis: 9 }],
]);

export function networkLimits(instanceType: string): NetworkLimits | undefined {
  return LIMITS.get(instanceType);
}

export function knownInstanceTypes(): string[] {
  return [...LIMITS.keys()];
}
