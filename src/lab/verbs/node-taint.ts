// Taints on a lab node, as a node registered with the kubelet's --register-with-taints carries
// them (vpcnet's startup taint, VPCNET_STARTUP_TAINT), put and read through the emulator's
// Kubernetes slice on its admin socket; and the events the agents reported there.
import { request } from 'node:http';
import { labTimeout } from '../timeouts.ts';
import { unixJson } from '../unix-http.ts';

export interface LabTaint {
  readonly key: string;
  readonly effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  readonly value?: string;
}

function jsonPatch(socketPath: string, path: string, ops: unknown[]): Promise<void> {
  const body = JSON.stringify(ops);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath,
        method: 'PATCH',
        path,
        headers: { 'content-type': 'application/json-patch+json', 'content-length': Buffer.byteLength(body) },
        timeout: labTimeout(10_000),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () =>
          res.statusCode === 200
            ? resolve()
            : reject(new Error(`PATCH ${path} answered ${res.statusCode}: ${text.trim().slice(0, 300)}`)),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error(`PATCH ${path}: no answer`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** The keys of the node's taints, in order. */
export async function labNodeTaintKeys(adminSocket: string, node: string): Promise<string[]> {
  const n = (await unixJson(adminSocket, 'GET', `/api/v1/nodes/${encodeURIComponent(node)}`)) as {
    spec?: { taints?: { key: string }[] };
  };
  return (n.spec?.taints ?? []).map((t) => t.key);
}

/** Appends `taint` to the node's taints (creating the list when the node has none). */
export async function addLabNodeTaint(adminSocket: string, node: string, taint: LabTaint): Promise<void> {
  const path = `/api/v1/nodes/${encodeURIComponent(node)}`;
  const has = (await labNodeTaintKeys(adminSocket, node)).length > 0;
  const op = has
    ? { op: 'add', path: '/spec/taints/-', value: taint }
    : { op: 'add', path: '/spec/taints', value: [taint] };
  await jsonPatch(adminSocket, path, [op]);
}

export interface LabEvent {
  readonly reason: string;
  readonly message: string;
  readonly involvedObject: { readonly kind: string; readonly name: string; readonly namespace?: string };
  readonly source?: { readonly host?: string };
}

/** Every event in the lab's Kubernetes API. */
export async function labEvents(adminSocket: string): Promise<LabEvent[]> {
  return ((await unixJson(adminSocket, 'GET', '/api/v1/events')) as { items: LabEvent[] }).items;
}
