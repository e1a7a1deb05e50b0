// Test fixture: a real HTTP server on a temp unix socket standing in for the agent.
// It records what the plugin sent and answers what the test tells it to.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly contentType: string | undefined;
  readonly body: string;
}

export type FakeAgentReply = (req: RecordedRequest) => { status: number; body: string } | 'hang';

export interface FakeAgent {
  readonly socketPath: string;
  readonly dir: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startFakeAgent(reply: FakeAgentReply): Promise<FakeAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'vpcnet-fake-agent-'));
  const socketPath = join(dir, 'agent.sock');
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        contentType: req.headers['content-type'],
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(recorded);
      const answer = reply(recorded);
      if (answer === 'hang') return;
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    dir,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A reply that answers every request with this ForwardedResponse. */
export function answerWith(exitCode: number, stdout: string): FakeAgentReply {
  return () => ({ status: 200, body: JSON.stringify({ exitCode, stdout }) });
}
