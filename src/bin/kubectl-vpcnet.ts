// bin/kubectl-vpcnet: vpcnetctl as a kubectl plugin. kubectl runs `kubectl-vpcnet` from PATH for
// `kubectl vpcnet ...` with the words after `vpcnet` as arguments (`kubectl vpcnet audit --json`),
// in kubectl's own environment: the audit's default source is that kubectl and its kubeconfig.
import './vpcnetctl.ts';
