// `vpcnetctl state`: the agent's introspection view, read over its unix socket.

import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from '../cni/wire.ts';
import { getJson } from '../infra/unix-socket-json.ts';

export const STATE_HELP = `Usage: vpcnetctl state [--agent-socket PATH]

Prints the agent's state as JSON: attachments (with what each owns), the address pool per ENI,
cooling addresses, and operation counters.
`;

export async function runStateCommand(argv: string[], out: (s: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'agent-socket': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    out(STATE_HELP);
    return 0;
  }
  const socket = values['agent-socket'] ?? DEFAULT_AGENT_SOCKET;
  const { status, body } = await getJson(socket, '/v1/state');
  out(`${JSON.stringify(body, null, 2)}\n`);
  return status === 200 ? 0 : 1;
}
