// One table of dataplane scenarios, run against the fake kernel (src/dataplane/dataplane.test.ts)
// and against the real one in network namespaces (test/kernels/dataplane-scenarios.test.ts). The same
// assertions pass on both, or the fake has drifted from the kernel it stands in for.
import type { KernelOp, TrunkDriver } from '../../plan/kernel-op.ts';
import type { Dataplane } from '../dataplane.ts';
import type { Namespace } from '../kernel.ts';
import { branchScenarios } from './branch-scenarios.ts';
import { nodeScenarios } from './node-scenarios.ts';
import { podScenarios } from './pod-scenarios.ts';

export { SCENARIO_VPC } from './scenario-helpers.ts';

export interface Harness {
  readonly dataplane: Dataplane;
  /**
   * The driver of branch devices on a trunk: 802.1q `vlan` in production; `macvlan` on a kernel
   * without 802.1q (this machine's); the fake kernel has both.
   */
  readonly trunkDriver: TrunkDriver;
  /** A new, empty pod namespace; returns its path. */
  pod(): Promise<string>;
  deleteNetns(path: string): Promise<void>;
  /** A link on the node carrying `mac` (an ENI the cloud attached). */
  addNodeLink(name: string, mac: string): Promise<void>;
  setLinkDown(ns: Namespace, dev: string): Promise<void>;
  /** Changes made by hand (an operator, another program); they must succeed. */
  byHand(ns: Namespace, ops: readonly KernelOp[]): Promise<void>;
}

export interface Scenario {
  readonly name: string;
  /** The node's SNAT table is set up first (default true). */
  readonly nodeSetUp?: boolean;
  run(h: Harness): Promise<void>;
}

export const scenarios: readonly Scenario[] = [...podScenarios, ...nodeScenarios, ...branchScenarios];
