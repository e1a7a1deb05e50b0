// Pods with security groups, trunk driver macvlan: this machine's kernel has no 802.1q. The same
// suite runs with the vlan driver under User-Mode Linux (test/kernels/uml/branch-eni.test.ts).
import { branchEniSuite } from './branch-eni-suite.ts';

branchEniSuite('macvlan');
