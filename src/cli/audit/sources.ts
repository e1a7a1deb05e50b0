// Where the audit reads from, the same rules whatever the place: EC2 through the agent's own
// Query API client (counted: the audit's EC2 budget is a goal), the Kubernetes API (its own client
// at a given URL or in-cluster, else `kubectl get --raw` with the caller's kubeconfig), and the
// agents (their sockets when they are on this machine: a lab, or a node; else `kubectl exec` into
// each vpcnet pod running `vpcnetctl state`, which reads the socket there).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { QueryStruct } from '../../cloud/ec2-query/query-form.ts';
import { AwsServiceError } from '../../cloud/ec2-query/service-error.ts';
import type { XmlElement } from '../../cloud/ec2-query/xml-reader.ts';
import { THROTTLING_CODES } from '../../cloud/ec2-retry.ts';
import { errorText } from '../../infra/error-text.ts';
import { getJson } from '../../infra/unix-socket-json.ts';
import type { KubeClient } from '../../pods/kube-client.ts';
import { type AgentRead, readAgent } from './model.ts';

const run = promisify(execFile);

/** EC2 as the audit calls it: every call counted (each attempt is one EC2 answers). */
export interface CountedEc2 {
  call(action: string, params: QueryStruct): Promise<XmlElement>;
  readonly calls: number;
}

/** Throttled or failed on EC2's side: worth another try, after a growing pause. */
function retryable(err: unknown): boolean {
  return err instanceof AwsServiceError && (THROTTLING_CODES.has(err.code) || err.status >= 500);
}

export function countedEc2(ec2: {
  call(action: string, params: QueryStruct): Promise<XmlElement>;
}): CountedEc2 {
  let calls = 0;
  return {
    async call(action, params) {
      for (let attempt = 1; ; attempt++) {
        calls++;
        try {
          return await ec2.call(action, params);
        } catch (err) {
          if (!retryable(err) || attempt >= 6) throw err;
          await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
        }
      }
    },
    get calls() {
      return calls;
    },
  };
}

/** A GET of the Kubernetes API's JSON. */
export type KubeGet = (path: string) => Promise<unknown>;

export function kubeClientGet(client: KubeClient): KubeGet {
  return (path) => client.request('GET', path, undefined, undefined, { timeoutMs: 30_000 });
}

/** Through kubectl, with whatever the kubeconfig says (exec credential plugins included). */
export function kubectlGet(kubectl: readonly string[]): KubeGet {
  return async (path) => {
    const [file, ...args] = kubectl;
    const { stdout } = await run(file ?? 'kubectl', [...args, 'get', '--raw', path], {
      maxBuffer: 512 << 20,
    });
    return JSON.parse(stdout) as unknown;
  };
}

/** Every item of a list, following `continue` (500 at a time, as kubectl pages). */
export async function listAll(get: KubeGet, path: string): Promise<unknown[]> {
  const items: unknown[] = [];
  let token: string | undefined;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = (await get(
      `${path}${sep}limit=500${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`,
    )) as {
      items?: unknown[];
      metadata?: { continue?: string };
    };
    items.push(...(page.items ?? []));
    token = page.metadata?.continue === '' ? undefined : page.metadata?.continue;
  } while (token !== undefined);
  return items;
}

/** One node's agent, and how to read its state. */
export interface AgentSource {
  readonly node: string;
  state(): Promise<unknown>;
}

/** Agents whose sockets are reachable from here (a lab's, or `NODE=PATH` given). */
export function socketAgents(
  sockets: readonly { readonly node: string; readonly socket: string }[],
): () => Promise<AgentSource[]> {
  return () =>
    Promise.resolve(
      sockets.map(({ node, socket }) => ({
        node,
        async state() {
          const { status, body } = await getJson(socket, '/v1/state', 15_000);
          if (status !== 200) throw new Error(`${socket} answered /v1/state with ${status}`);
          return body;
        },
      })),
    );
}

/**
 * The agents of a cluster: each pod of the vpcnet DaemonSet, read by `kubectl exec` of `vpcnetctl
 * state` in it (the introspection endpoint listens on the node's loopback only, by design).
 */
export function kubectlExecAgents(
  kubectl: readonly string[],
  get: KubeGet,
  namespace: string,
  selector: string,
): () => Promise<AgentSource[]> {
  return async () => {
    const pods = (await listAll(
      get,
      `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
    )) as {
      metadata?: { name?: string };
      spec?: { nodeName?: string };
    }[];
    return pods.map((p) => {
      const pod = p.metadata?.name ?? '?';
      const [file, ...args] = kubectl;
      return {
        node: p.spec?.nodeName ?? pod,
        async state() {
          const { stdout } = await run(
            file ?? 'kubectl',
            [
              ...args,
              'exec',
              '-n',
              namespace,
              pod,
              '-c',
              'vpcnet',
              '--',
              '/opt/vpcnet/bin/vpcnetctl',
              'state',
              '--json',
            ],
            { maxBuffer: 256 << 20, timeout: 30_000 },
          );
          return JSON.parse(stdout) as unknown;
        },
      };
    });
  };
}

/** How many agents are read at once by default (each a `kubectl exec` in a cluster). */
export const DEFAULT_AGENT_READS = 16;

export interface AgentReadOptions {
  /** Agents read at once (default DEFAULT_AGENT_READS). */
  readonly parallel?: number;
  /** Only these nodes' agents. */
  readonly only?: ReadonlySet<string>;
}

/** Every agent's state, `parallel` at a time; one that cannot be read says why. */
export async function readAgents(
  agents: () => Promise<AgentSource[]>,
  options: AgentReadOptions = {},
): Promise<AgentRead[]> {
  const { only } = options;
  const list = (await agents()).filter((a) => only === undefined || only.has(a.node));
  const out: AgentRead[] = new Array(list.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < list.length; i = next++) {
      const a = list[i]!;
      try {
        out[i] = readAgent(a.node, await a.state());
      } catch (err) {
        out[i] = { node: a.node, error: errorText(err) };
      }
    }
  };
  const parallel = Math.max(1, options.parallel ?? DEFAULT_AGENT_READS);
  await Promise.all(Array.from({ length: Math.min(parallel, list.length) }, worker));
  return out.sort((a, b) => a.node.localeCompare(b.node));
}
