// Pods with security groups, trunk driver vlan (802.1q), under User-Mode Linux: the suite of
// test/lab/branch-eni-suite.ts, in two halves (this one and branch-eni-b.test.ts) that boot side by
// side, as UML's kernel uses one CPU and the machine has two. UML has no nf_tables, so the node does
// no SNAT here (external SNAT, the upstream's AWS_VPC_K8S_CNI_EXTERNALSNAT); branch-ENI pods are
// never SNATed anyway. The burst has 12 pods here (30 on the host's macvlan run,
// test/lab/branch-eni.test.ts): UML's one CPU took 90 s for 30, and what only this kernel shows,
// 802.1q devices for every pod, 12 show as well. The cases about forged and bad annotations
// (refused before any device is made, whatever the driver) run on the host's macvlan run only: here
// they took 1-1.5 minutes and showed nothing new.
import { branchEniSuite } from '../../lab/branch-eni-suite.ts';

branchEniSuite('vlan', {
  extraAgentEnv: ['AWS_VPC_K8S_CNI_EXTERNALSNAT=true'],
  burstPods: 12,
  cases: ['1', '2', '3', '5', '6'],
});
