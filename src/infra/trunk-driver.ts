// How a node reaches branch ENIs on its trunk ENI's link: 802.1q VLAN devices (production), or
// macvlan devices with the branch ENI's MAC where the kernel has no 8021q. One word for the agent's
// dataplane, its settings, its ledger records, and the emulator's fabric, which carries branch
// ENIs the same two ways.
export const TRUNK_DRIVERS = ['vlan', 'macvlan'] as const;

export type TrunkDriver = (typeof TRUNK_DRIVERS)[number];
