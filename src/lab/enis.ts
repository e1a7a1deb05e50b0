// `vpcnetctl lab eni`: an ENI attached to a node's instance by someone other than its agent, with
// its addresses, through the emulator's admin socket: what a locked-down VPC's tooling does for a
// node whose agent may not call EC2 (ENABLE_IMDS_ONLY_MODE, DISABLE_NETWORK_RESOURCE_PROVISIONING).
// The fabric gives the node a link for it and routes its addresses there, as for the agent's own.
import { parseArgs } from 'node:util';
import { UsageError } from '../cli/usage-error.ts';
import { labLayout } from './layout.ts';
import { unixJson } from './unix-http.ts';

export const ENI_HELP = `Usage: vpcnetctl lab eni --name L --node NODE [--secondary-ips N] [--prefixes N]

Attaches a new ENI to NODE's instance at its lowest free device index, in the node's subnet with
its security groups, then gives it N secondary IPs and N /28 prefixes (default none), as an
operator would in a VPC where the agent may not call EC2 (ENABLE_IMDS_ONLY_MODE=true,
DISABLE_NETWORK_RESOURCE_PROVISIONING=true). These are not EC2 calls of the agent's: the emulator
does not count them. Prints the ENI (ID, MAC, device index, addresses) as JSON.
`;

function count(text: string | undefined, flag: string): number {
  if (text === undefined) return 0;
  if (!/^\d+$/.test(text))
    throw new UsageError(`--${flag} must be a whole number, not ${JSON.stringify(text)}`);
  return Number(text);
}

export async function labEniCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: 'string' },
      node: { type: 'string' },
      'secondary-ips': { type: 'string' },
      prefixes: { type: 'string' },
    },
  });
  if (!values.name) throw new UsageError('--name is required');
  if (!values.node) throw new UsageError('--node is required');
  const adminSocket = labLayout(values.name, 0).emulator.adminSocket;
  const state = (await unixJson(adminSocket, 'GET', '/admin/state')) as {
    instances: { instanceId: string; nodeName: string | null }[];
  };
  const instance = state.instances.find((i) => i.nodeName === values.node);
  if (instance === undefined) throw new Error(`lab ${values.name} has no node ${values.node}`);
  const eni = await unixJson(adminSocket, 'POST', `/admin/instances/${instance.instanceId}/enis`, {
    secondaryIpCount: count(values['secondary-ips'], 'secondary-ips'),
    ipv4PrefixCount: count(values.prefixes, 'prefixes'),
  });
  process.stdout.write(`${JSON.stringify(eni)}\n`);
  return 0;
}
