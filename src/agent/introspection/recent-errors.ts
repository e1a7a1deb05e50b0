// The last failed CNI operations, for operators: `vpcnetctl status` warns about them and
// `vpcnetctl explain` shows a pod's. A bounded ring (newest first), fed from what the CNI handler
// answered, so that it sees every failure whatever its cause (a parse error included).
import { parseCniArgs } from '../../cni/cni-args.ts';
import type { ForwardedRequest, ForwardedResponse } from '../../cni/wire.ts';

export interface RecentCniError {
  /** ISO time of the answer. */
  readonly time: string;
  readonly command: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly containerId?: string;
  readonly ifName?: string;
  /** The CNI error code the runtime got (e.g. 11 try again later). */
  readonly code?: number;
  readonly message: string;
}

export const RECENT_ERRORS_KEPT = 50;

/** The CNI error the plugin printed: `{ code, msg, details }` (parsed leniently: it is our own output). */
function cniErrorOf(stdout: string): { code?: number; message: string } {
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    const msg = typeof e.msg === 'string' ? e.msg : stdout.trim();
    const message = typeof e.details === 'string' && e.details !== '' ? `${msg}: ${e.details}` : msg;
    return typeof e.code === 'number' ? { code: e.code, message } : { message };
  } catch {
    return { message: stdout.trim().slice(0, 500) };
  }
}

/** CNI_ARGS as far as they parse (a request refused for bad CNI_ARGS is recorded too). */
function podArgs(raw: string | undefined): ReadonlyMap<string, string> {
  try {
    return parseCniArgs(raw);
  } catch {
    return new Map();
  }
}

export class RecentErrors {
  readonly #now: () => number;
  readonly #kept: number;
  #ring: RecentCniError[] = [];

  constructor(now: () => number, kept = RECENT_ERRORS_KEPT) {
    this.#now = now;
    this.#kept = kept;
  }

  /** Records the answer if it is a failure. */
  observe(req: ForwardedRequest, res: ForwardedResponse): void {
    if (res.exitCode === 0) return;
    const args = podArgs(req.env.CNI_ARGS);
    const optional = {
      namespace: args.get('K8S_POD_NAMESPACE'),
      pod: args.get('K8S_POD_NAME'),
      containerId: req.env.CNI_CONTAINERID,
      ifName: req.env.CNI_IFNAME,
    };
    const entry: RecentCniError = {
      time: new Date(this.#now()).toISOString(),
      command: req.env.CNI_COMMAND ?? 'unknown',
      ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined && v !== '')),
      ...cniErrorOf(res.stdout),
    };
    this.#ring = [entry, ...this.#ring].slice(0, this.#kept);
  }

  /** A CNI handler that records its failures here. */
  watching<A extends unknown[]>(
    handler: (req: ForwardedRequest, ...rest: A) => Promise<ForwardedResponse>,
  ): (req: ForwardedRequest, ...rest: A) => Promise<ForwardedResponse> {
    return async (req, ...rest) => {
      const res = await handler(req, ...rest);
      this.observe(req, res);
      return res;
    };
  }

  /** Newest first. */
  list(): readonly RecentCniError[] {
    return this.#ring;
  }

  /** A pod's failures, newest first. */
  ofPod(namespace: string, pod: string): RecentCniError[] {
    return this.#ring.filter((e) => e.namespace === namespace && e.pod === pod);
  }
}
