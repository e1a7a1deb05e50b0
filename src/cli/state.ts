// `vpcnetctl state`: the agent's introspection view, read over its unix socket.
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from '../cni/wire.ts';

export const STATE_HELP = `Usage: vpcnetctl state [--agent-socket PATH]

Prints the agent's state as JSON: attachments (with what each owns), the address pool per ENI,
cooling addresses, and operation counters.
`;

export function getJson(
  socketPath: string,
  path: string,
  timeoutMs = 5000,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolvePromise, reject) => {
    const req = request({ socketPath, path, method: 'GET', timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolvePromise({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown });
        } catch {
          reject(new Error(`agent at ${socketPath} answered ${path} with non-JSON: ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`agent at ${socketPath}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

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
