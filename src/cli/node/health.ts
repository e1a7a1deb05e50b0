// `vpcnetctl health`: the DaemonSet's probes. Quiet on success, one line on failure; it runs every
// few seconds on every node, so it loads nothing but node:http (see the timing test).
import { parseArgs } from 'node:util';
import { defaultAgentSocket } from '../../cni/wire.ts';
import { errorText } from '../../infra/error-text.ts';
import { getJson } from '../../infra/unix-socket-json.ts';
import { heldReason } from '../doctor/findings-file.ts';
import { EXIT_DOWN, EXIT_HEALTHY, EXIT_USAGE } from '../output.ts';

export const HEALTH_HELP = `Usage: vpcnetctl health [--live] [--agent-socket PATH | --lab NAME [--node N]] [--timeout-ms N]

The agent's probes (the DaemonSet's readiness and liveness). Prints nothing when healthy.
  (default)  ready: the agent answers GET /v1/healthz with 200, i.e. it serves CNI requests
             (STATUS would succeed), and the doctor's start-up run (doctor --init, doctor.json
             beside the socket) found no error: else the first error and its fix are the reason
  --live     alive: the agent answers at all (200, or 503 while it rebuilds its state)
  --lab NAME [--node N]
             a node of lab NAME on this machine (default node1) instead of --agent-socket
Exit codes: 0 healthy, 3 not ready / not answering, 2 usage error.
`;

export async function runHealthCommand(
  argv: string[],
  out: (s: string) => void,
  err: (s: string) => void,
  environment: Readonly<Record<string, string | undefined>> = {},
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      live: { type: 'boolean' },
      'agent-socket': { type: 'string' },
      lab: { type: 'string' },
      node: { type: 'string' },
      'timeout-ms': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    out(HEALTH_HELP);
    return EXIT_HEALTHY;
  }
  // The probe runs every few seconds: what names a lab's node loads only when a lab is named.
  const socket =
    values.lab === undefined && values.node === undefined
      ? (values['agent-socket'] ?? defaultAgentSocket(environment))
      : (await (await import('./node-target.ts')).resolveNodeTarget(values)).agentSocket;
  const timeoutMs = Number(values['timeout-ms'] ?? '3000');
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    err('vpcnetctl health: --timeout-ms takes a positive whole number\n');
    return EXIT_USAGE;
  }
  try {
    const { status } = await getJson(socket, '/v1/healthz', timeoutMs);
    if (values.live && (status === 200 || status === 503)) return EXIT_HEALTHY;
    if (status === 200) {
      // Readiness is held while the doctor's start-up run (the init step) found errors.
      const held = await heldReason(socket);
      if (held === undefined) return EXIT_HEALTHY;
      err(`${held}\n`);
      return EXIT_DOWN;
    }
    err(`vpcnet agent at ${socket} is not ready (healthz answered ${status})\n`);
  } catch (e) {
    err(`vpcnet agent at ${socket} does not answer: ${errorText(e)}\n`);
  }
  return EXIT_DOWN;
}
