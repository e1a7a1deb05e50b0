// pods/{name}/exec as the API server serves it to kubectl ≥ 1.31: a WebSocket (websocket.ts) with
// the remote-command subprotocol v5.channel.k8s.io (or v4). Every binary message starts with its
// channel: 0 stdin, 1 stdout, 2 stderr, 3 the command's end as a JSON metav1.Status, 4 terminal
// resize; v5 adds 255, "no more data on channel N" (its second byte), which half-closes stdin.
// The command's exit code travels in the Status: Success, or Failure with reason NonZeroExitCode
// and a cause {reason: "ExitCode", message: "<n>"}, which kubectl exits with. SPDY, which kubectl
// falls back to when the WebSocket upgrade is refused, is not spoken: the request is checked
// first, so a refusal (404 no such pod, 400 no such container) reads the same on either path.
//
// The emulator runs no containers: what a container's command is on this machine is the
// `ContainerRuntime`'s to say (the lab's maps a DaemonSet pod to its node, src/lab/pod-runtime.ts),
// or to refuse with a KubeError. Without one, every exec is refused.
import { type ChildProcess, spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { constants } from 'node:os';
import type { Duplex } from 'node:stream';
import { errorText } from '../../infra/error-text.ts';
import { KubeError, type ObjectStore } from './object-store.ts';
import { isJsonObject, type JsonObject, status } from './objects.ts';
import {
  acceptHandshake,
  CLOSE,
  HandshakeRefused,
  refuseUpgrade,
  WebSocketSession,
  wantsWebSocket,
} from './websocket.ts';

/** In the server's order of preference; the client's order decides (websocket.ts). */
export const EXEC_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;

export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

export const POD_EXEC_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/;

/** An exec the API accepted: the pod as stored, and what its query asked. */
export interface ExecRequest {
  readonly namespace: string;
  readonly podName: string;
  readonly pod: JsonObject;
  readonly container: string;
  readonly command: readonly string[];
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
}

/** A process to start for an exec: what the container would run, on this machine. */
export interface ExecProcess {
  readonly file: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
}

/** Says how a container's command runs here, or throws a KubeError refusing it. */
export type ContainerRuntime = (request: ExecRequest) => ExecProcess;

export interface PodExecDeps {
  readonly pods: ObjectStore;
  readonly runtime?: ContainerRuntime;
  readonly log?: (line: Record<string, unknown>) => void;
}

function flag(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  return v === 'true' || v === '1';
}

function containerNames(pod: JsonObject): string[] {
  const spec = pod.spec;
  const containers = isJsonObject(spec) && Array.isArray(spec.containers) ? spec.containers : [];
  return containers.flatMap((c) => (isJsonObject(c) && typeof c.name === 'string' ? [c.name] : []));
}

/** The exec a URL asks for, checked as the API server checks it (404 pod, 400 container/command). */
export function parseExecRequest(pods: ObjectStore, url: URL): ExecRequest {
  const m = POD_EXEC_PATH.exec(url.pathname);
  if (m === null)
    throw new KubeError(404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
  const namespace = decodeURIComponent(m[1] ?? '');
  const podName = decodeURIComponent(m[2] ?? '');
  const pod = pods.get(namespace, podName);
  const names = containerNames(pod);
  const asked = url.searchParams.get('container') ?? '';
  let container = asked;
  if (asked === '') {
    if (names.length !== 1)
      throw new KubeError(
        400,
        'BadRequest',
        `a container name must be specified for pod ${podName}, choose one of: [${names.join(' ')}]`,
      );
    container = names[0] ?? '';
  } else if (!names.includes(asked)) {
    throw new KubeError(400, 'BadRequest', `container ${asked} is not valid for pod ${podName}`);
  }
  const command = url.searchParams.getAll('command');
  if (command.length === 0) throw new KubeError(400, 'BadRequest', 'you must specify at least 1 command');
  const request = {
    namespace,
    podName,
    pod,
    container,
    command,
    stdin: flag(url, 'stdin'),
    stdout: flag(url, 'stdout'),
    stderr: flag(url, 'stderr'),
  };
  if (!request.stdin && !request.stdout && !request.stderr)
    throw new KubeError(400, 'BadRequest', 'you must specify at least 1 of stdin, stdout, stderr');
  if (flag(url, 'tty'))
    throw new KubeError(400, 'BadRequest', 'exec here has no terminal (tty): run the command without -t');
  return request;
}

/** The Status on channel 3 when the command ended with `code` (0 success). */
export function exitStatus(code: number): JsonObject {
  if (code === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: exit status ${code}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  };
}

function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  // A shell's convention, which a container runtime reports too: 128 + the signal's number.
  const n = signal === null ? undefined : constants.signals[signal];
  return n === undefined ? 1 : 128 + n;
}

export class PodExec {
  readonly #deps: PodExecDeps;
  readonly #running = new Set<{ readonly session: WebSocketSession; readonly child: ChildProcess }>();

  constructor(deps: PodExecDeps) {
    this.#deps = deps;
  }

  /** An upgrade request on pods/{name}/exec: the WebSocket and the command, or a Status refusing. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, url: URL): void {
    let request: ExecRequest;
    let proc: ExecProcess;
    let opened: ReturnType<typeof acceptHandshake>;
    try {
      request = parseExecRequest(this.#deps.pods, url);
      const runtime = this.#deps.runtime;
      if (runtime === undefined)
        throw new KubeError(
          400,
          'BadRequest',
          `pod ${request.namespace}/${request.podName}: this API runs no containers (no container runtime given)`,
        );
      proc = runtime(request);
      if (!wantsWebSocket(req))
        throw new KubeError(
          400,
          'BadRequest',
          `exec is served over WebSocket only (${EXEC_PROTOCOLS.join(', ')}), not ${req.headers.upgrade ?? 'a plain request'}`,
        );
      opened = acceptHandshake(req, EXEC_PROTOCOLS);
    } catch (err) {
      const e =
        err instanceof KubeError
          ? err
          : err instanceof HandshakeRefused
            ? new KubeError(err.status, 'BadRequest', err.message)
            : new KubeError(500, 'InternalError', errorText(err));
      this.#deps.log?.({ msg: 'kube exec refused', path: url.pathname, status: e.code, error: e.message });
      refuseUpgrade(
        socket,
        e.code,
        status(e.code, e.reason, e.message),
        err instanceof HandshakeRefused ? err.headers : {},
      );
      return;
    }
    socket.write(opened.response);
    this.#run(request, proc, opened.protocol, socket, head);
  }

  /** Ends every exec (the emulator is stopping): the commands are killed, the sockets closed. */
  closeAll(): void {
    for (const { session, child } of this.#running) {
      child.kill('SIGKILL');
      session.destroy();
    }
    this.#running.clear();
  }

  #run(request: ExecRequest, proc: ExecProcess, protocol: string, socket: Duplex, head: Buffer): void {
    const child = spawn(proc.file, [...proc.args], {
      env: proc.env,
      ...(proc.cwd === undefined ? {} : { cwd: proc.cwd }),
      stdio: [
        request.stdin ? 'pipe' : 'ignore',
        request.stdout ? 'pipe' : 'ignore',
        request.stderr ? 'pipe' : 'ignore',
      ],
    });
    let ended = false;
    const session = new WebSocketSession(socket, head, {
      onMessage: (data) => {
        const channel = data[0];
        if (channel === CHANNEL.stdin) child.stdin?.write(data.subarray(1));
        else if (channel === CHANNEL.close && data[1] === CHANNEL.stdin) child.stdin?.end();
        // Resize (4) means nothing without a terminal; other channels are the server's to send.
      },
      onClose: () => {
        // The client went away before the command ended: nobody reads what it would print.
        if (!ended) child.kill('SIGTERM');
        this.#running.delete(entry);
      },
    });
    const entry = { session, child };
    this.#running.add(entry);
    child.stdin?.on('error', () => undefined);
    const forward = (channel: number, stream: NodeJS.ReadableStream | null) => {
      stream?.on('data', (chunk: Buffer) => {
        session.send(Buffer.concat([Buffer.of(channel), chunk]));
        // Backpressure: a command printing faster than the client reads waits for the socket.
        if (socket.writableNeedDrain) {
          stream.pause();
          socket.once('drain', () => stream.resume());
        }
      });
    };
    forward(CHANNEL.stdout, child.stdout);
    forward(CHANNEL.stderr, child.stderr);
    const finish = (end: JsonObject, exitCode: number | undefined) => {
      if (ended) return;
      ended = true;
      this.#deps.log?.({
        msg: 'kube exec',
        pod: `${request.namespace}/${request.podName}`,
        container: request.container,
        command: request.command,
        protocol,
        ...(exitCode === undefined ? { error: end.message ?? null } : { exitCode }),
      });
      // The Status last: the client reads channel 3 to its end, which the close frame marks.
      session.send(Buffer.concat([Buffer.of(CHANNEL.error), Buffer.from(JSON.stringify(end))]));
      session.close(CLOSE.normal);
    };
    child.once('error', (err) =>
      finish(status(500, 'InternalError', `cannot start ${proc.file}: ${errorText(err)}`), undefined),
    );
    // 'close', not 'exit': every byte the command printed has been forwarded by then.
    child.once('close', (code, signal) => {
      const exitCode = exitCodeOf(code, signal);
      finish(exitStatus(exitCode), exitCode);
    });
  }
}
