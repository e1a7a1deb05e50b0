// What aws-node leaves on a node, for the suites that make such a node (test/kernels: the firewall
// alone; test/lab: a whole node). Written from aws-node 1.2x's rules as `iptables-save` shows them.

/**
 * aws-node's iptables rules in iptables-restore form (nat: SNAT and connmark chains and the jumps to
 * them; mangle: the NodePort restore), with one rule of someone else's in each table beside them.
 */
export function awsNodeIptables(primaryIp: string, vpcCidr = '10.0.0.0/16'): string {
  return [
    '*nat',
    ':AWS-SNAT-CHAIN-0 - [0:0]',
    ':AWS-CONNMARK-CHAIN-0 - [0:0]',
    '-A PREROUTING -i eni+ -m comment --comment "AWS, outbound connections" -j AWS-CONNMARK-CHAIN-0',
    '-A PREROUTING -m comment --comment "AWS, CONNMARK" -j CONNMARK --restore-mark --nfmask 0x80 --ctmask 0x80',
    '-A POSTROUTING -m comment --comment "AWS SNAT CHAIN" -j AWS-SNAT-CHAIN-0',
    `-A AWS-CONNMARK-CHAIN-0 -d ${vpcCidr} -m comment --comment "AWS CONNMARK CHAIN, VPC CIDR" -j RETURN`,
    '-A AWS-CONNMARK-CHAIN-0 -m comment --comment "AWS, CONNMARK" -j CONNMARK --set-xmark 0x80/0x80',
    `-A AWS-SNAT-CHAIN-0 -d ${vpcCidr} -m comment --comment "AWS SNAT CHAIN" -j RETURN`,
    `-A AWS-SNAT-CHAIN-0 ! -o vlan+ -m comment --comment "AWS, SNAT" -m addrtype ! --dst-type LOCAL -j SNAT --to-source ${primaryIp} --random-fully`,
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j RETURN',
    'COMMIT',
    '*mangle',
    '-A PREROUTING -i eni+ -m comment --comment "AWS, primary ENI" -j CONNMARK --restore-mark --nfmask 0x80 --ctmask 0x80',
    '-A PREROUTING -m comment --comment "someone else" -j RETURN',
    'COMMIT',
    '',
  ].join('\n');
}

/** What removing aws-node's rules above takes out: 3 jumps, 2 chains flushed and deleted, 1 mangle rule. */
export const AWS_NODE_IPTABLES_REMOVALS = 8;
