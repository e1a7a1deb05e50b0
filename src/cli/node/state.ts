// `vpcnetctl state`: the agent's introspection view, read over its unix socket.

import { parseArgs } from 'node:util';
import { errorText } from '../../infra/error-text.ts';
import { getJson } from '../../infra/unix-socket-json.ts';
import type { CliEnv } from '../cli-env.ts';
import { EXIT_DOWN, jsonDocument } from '../output.ts';
import { NODE_TARGET_HELP, NODE_TARGET_OPTIONS, resolveNodeTarget } from './node-target.ts';

export const STATE_HELP = `Usage: vpcnetctl state [--agent-socket PATH | --lab NAME [--node N]] [--json]

Prints the agent's state as one JSON document: attachments (with what each owns), the address
pool per ENI, cooling addresses, and operation counters. It is JSON with or without --json
(accepted, as every status-like command takes it).
${NODE_TARGET_HELP}
Exit codes: 0, 3 when no agent answers (or it answers but cannot give its state), 2 usage error.
`;

export async function runStateCommand(argv: string[], env: CliEnv): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { ...NODE_TARGET_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    env.out(STATE_HELP);
    return 0;
  }
  const socket = (await resolveNodeTarget(values, {}, env.env)).agentSocket;
  let answer: { status: number; body: unknown };
  try {
    answer = await getJson(socket, '/v1/state');
  } catch (err) {
    env.err(`vpcnetctl state: no agent answers on ${socket}: ${errorText(err)}\n`);
    return EXIT_DOWN;
  }
  if (answer.status !== 200) {
    env.err(
      `vpcnetctl state: the agent on ${socket} answered ${answer.status}: ${JSON.stringify(answer.body)}\n`,
    );
    return EXIT_DOWN;
  }
  env.out(jsonDocument(answer.body));
  return 0;
}
