// GET of a JSON document over a unix socket: how vpcnetctl (and tests) read the agent's socket.
import { request } from 'node:http';

/** The status and parsed body; rejects on a non-JSON body, a connection error or no answer in time. */
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
