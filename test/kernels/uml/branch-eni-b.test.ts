// The other half of the branch-ENI suite under User-Mode Linux (see branch-eni-a.test.ts): the
// cases with an agent restart, VLAN reuse, a device deleted by hand and mixed pods.
import { branchEniSuite } from '../../lab/branch-eni-suite.ts';

branchEniSuite('vlan', {
  extraAgentEnv: ['AWS_VPC_K8S_CNI_EXTERNALSNAT=true'],
  cases: ['4', '7', '8', '10', '11'],
});
