// An agent socket that answers with recorded JSON: status and pods are judged on states a live
// agent is hard to bring into (pool growth blocked, EC2 errors, recovery).
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';

export interface FakeAgentAnswers {
  /** healthz status (200 ready, 503 rebuilding). */
  readonly healthz: 200 | 503;
  readonly state: unknown;
  readonly explain?: unknown;
}

export interface FakeAgentSocket {
  readonly requests: string[];
  close(): Promise<void>;
}

export async function serveFakeAgent(
  socketPath: string,
  answers: FakeAgentAnswers,
): Promise<FakeAgentSocket> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === '/v1/healthz') reply(answers.healthz, { ready: answers.healthz === 200 });
    else if (path === '/v1/state') reply(200, answers.state);
    else if (path === '/v1/explain' && answers.explain !== undefined) reply(200, answers.explain);
    else reply(404, { error: 'no route' });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A recorded state of this folder (`name`.json). */
export async function recordedState(name: string): Promise<unknown> {
  return JSON.parse(await readFile(new URL(`./${name}.json`, import.meta.url), 'utf8')) as unknown;
}
