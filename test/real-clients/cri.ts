// A minimal CRI runtime.v1 client (what kubelet speaks to a container runtime), over gRPC on a
// unix socket, from the api.proto that scripts/real-clients.sh extracts. Only the calls the
// suites use, promisified.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata;
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
  network: { ip: string; additionalIps: { ip: string }[] } | null;
}

export interface PodSandboxStatusResponse {
  status: PodSandboxStatus;
  /** Verbose only: runtime-specific details; containerd puts JSON under "info". */
  info: Record<string, string>;
}

export interface CriRuntime {
  version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }>;
  runPodSandbox(metadata: PodSandboxMetadata): Promise<string>;
  podSandboxStatus(id: string): Promise<PodSandboxStatusResponse>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  listPodSandboxIds(): Promise<string[]>;
  close(): void;
}

type Callback = (err: grpc.ServiceError | null, res: unknown) => void;
type UnaryMethod = (req: unknown, opts: grpc.CallOptions, cb: Callback) => void;

export function criClient(protoPath: string, socketPath: string, timeoutMs = 60000): CriRuntime {
  const def = protoLoader.loadSync(protoPath, {
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } };
  };
  const client = new pkg.runtime.v1.RuntimeService(`unix://${socketPath}`, grpc.credentials.createInsecure());
  const raw = client as unknown as Record<string, UnaryMethod>;

  function call<T>(method: string, req: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      raw[method]!.call(client, req, { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err) reject(new Error(`CRI ${method}: ${err.details || err.message}`));
        else resolve(res as T);
      });
    });
  }

  return {
    version: () => call('Version', { version: 'v1' }),
    async runPodSandbox(metadata) {
      const res = await call<{ podSandboxId: string }>('RunPodSandbox', {
        config: {
          metadata,
          hostname: metadata.name,
          labels: { 'io.kubernetes.pod.namespace': metadata.namespace },
          linux: {},
        },
      });
      return res.podSandboxId;
    },
    podSandboxStatus: (id) => call('PodSandboxStatus', { podSandboxId: id, verbose: true }),
    async stopPodSandbox(id) {
      await call('StopPodSandbox', { podSandboxId: id });
    },
    async removePodSandbox(id) {
      await call('RemovePodSandbox', { podSandboxId: id });
    },
    async listPodSandboxIds() {
      const res = await call<{ items: { id: string }[] }>('ListPodSandbox', {});
      return res.items.map((i) => i.id);
    },
    close: () => client.close(),
  };
}

/** The sandbox's network namespace path, from containerd's verbose status info. */
export function sandboxNetnsPath(status: PodSandboxStatusResponse): string {
  const info = JSON.parse(status.info.info ?? '{}') as {
    netNamespacePath?: string;
    runtimeSpec?: { linux?: { namespaces?: { type: string; path?: string }[] } };
  };
  const fromSpec = info.runtimeSpec?.linux?.namespaces?.find((n) => n.type === 'network')?.path;
  const path = info.netNamespacePath || fromSpec;
  if (!path) throw new Error(`no network namespace path in the status of sandbox ${status.status.id}`);
  return path;
}
