// Network limits of the instance types the emulator can launch (figures as EC2 publishes them).

export interface NetworkLimits {
  readonly maxEnis: number;
  /** IPv4 addresses per ENI, the primary included. */
  readonly ipsPerEni: number;
}

const LIMITS: ReadonlyMap<string, NetworkLimits> = new Map([
  ['t3.medium', { maxEnis: 3, ipsPerEni: 6 }],
  ['t3.large', { maxEnis: 3, ipsPerEni: 12 }],
  ['m5.large', { maxEnis: 3, ipsPerEni: 10 }],
  ['m5.xlarge', { maxEnis: 4, ipsPerEni: 15 }],
  ['m5.4xlarge', { maxEnis: 8, ipsPerEni: 30 }],
  ['c5.large', { maxEnis: 3, ipsPerEni: 10 }],
]);

export function networkLimits(instanceType: string): NetworkLimits | undefined {
  return LIMITS.get(instanceType);
}

export function knownInstanceTypes(): string[] {
  return [...LIMITS.keys()];
}
