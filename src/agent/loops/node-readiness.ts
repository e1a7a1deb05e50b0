// A node that says when it cannot serve (docs/design.md, "Capacity"). Kubernetes sees a node as
// Ready whatever its CNI's pool holds, so pods bound to a node whose pool is empty and cannot grow
// wait in ContainerCreating instead of going elsewhere (upstream #1923, #2274). The agent keeps
// the Node condition `vpcnet.io/NetworkReady` current: True (`Serving`, or `PoolGrowing` while an
// address is on its way) or False with why the pool is empty and cannot grow. With
// VPCNET_NODE_READINESS=taint it also puts `vpcnet.io/ip-exhausted:NoSchedule` on the node after
// the False state held for `confirmMs`, and takes it off, with hysteresis, once a warm target's
// worth of addresses is free or the pool can grow again. The taint is opt-in (upstream #2808: a
// taint that the CNI sets and clears is one more way for a node to refuse work, and a pod
// tolerating every taint ignores it); with `condition` no taint is ever written, so a cluster whose
// taints are owned by kubernetes-sigs/node-readiness-controller keeps one owner per taint.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { SelfTimedLoop } from '../../infra/self-timed-loop.ts';
import type { EventRecorder } from '../../pods/kube-events.ts';
import type { NodeConditions } from '../../pods/node-conditions.ts';
import type { NodeTaints } from '../../pods/node-taints.ts';

export const NETWORK_READY_CONDITION = 'vpcnet.io/NetworkReady';
export const IP_EXHAUSTED_TAINT = { key: 'vpcnet.io/ip-exhausted', effect: 'NoSchedule' } as const;

/** What the pool says, each time readiness looks. */
export interface PoolReadiness {
  /** Addresses an ADD could take now. */
  readonly free: number;
  /** Why the last pass of the pool failed or held back, or null. */
  readonly blocked: string | null;
  /** An ENI with a free slot, or a device slot for another ENI, and provisioning on. */
  readonly roomToGrow: boolean;
  /** Free addresses that take the taint off again (a warm target's worth, at least 1). */
  readonly warmWorth: number;
}

export interface Readiness {
  readonly ready: boolean;
  readonly reason: string;
  readonly message: string;
}

/** Reasons of a False condition, from the text of the error that blocks the pool's growth. */
const BLOCKED_REASONS: readonly [RegExp, string][] = [
  [
    /InsufficientFreeAddressesInSubnet|InsufficientCidrBlocks|sufficient free Ipv4|no free address/,
    'PoolEmpty:SubnetExhausted',
  ],
  [/UnauthorizedOperation|AccessDenied|AuthFailure|not authorized/i, 'Ec2Unauthorized'],
  [/RequestLimitExceeded|Throttl|rate limit/i, 'Ec2Budget'],
  [/AttachmentLimitExceeded|PrivateIpAddressLimitExceeded/, 'PoolEmpty:MaxEnis'],
  [/unschedulable/, 'PoolEmpty:Cordoned'],
  [/can take a new ENI|ENIConfig|subnet discovery/, 'PoolEmpty:NoSubnet'],
];

/** Reasons no retry fixes by itself soon: the taint goes on without waiting to confirm them. */
const LASTING_REASONS: ReadonlySet<string> = new Set([
  'PoolEmpty:SubnetExhausted',
  'PoolEmpty:MaxEnis',
  'PoolEmpty:NoSubnet',
  'PoolEmpty:Cordoned',
  'Ec2Unauthorized',
]);

/** The condition for what the pool says now. */
export function readinessOf(p: PoolReadiness): Readiness {
  if (p.free > 0) {
    const growth = p.blocked === null ? '' : `; the pool cannot grow: ${p.blocked}`;
    return { ready: true, reason: 'Serving', message: `${p.free} addresses free${growth}` };
  }
  if (p.blocked !== null) {
    const reason =
      BLOCKED_REASONS.find(([pattern]) => pattern.test(p.blocked ?? ''))?.[1] ?? 'PoolEmpty:GrowthFailed';
    return { ready: false, reason, message: `no address is free and the pool cannot grow: ${p.blocked}` };
  }
  if (!p.roomToGrow) {
    return {
      ready: false,
      reason: 'PoolEmpty:MaxEnis',
      message: 'no address is free and every ENI the node may attach is full (or ENI provisioning is off)',
    };
  }
  return { ready: true, reason: 'PoolGrowing', message: 'no address is free; the pool is adding some' };
}

export interface NodeReadinessDeps {
  readonly mode: 'condition' | 'taint';
  readonly conditions: NodeConditions;
  /** Taint mode: the node's taints. */
  readonly taints?: Pick<NodeTaints, 'add' | 'remove'>;
  readonly pool: () => PoolReadiness;
  readonly log: Logger;
  /** Wall clock (ms since epoch). */
  readonly now: () => number;
  readonly events?: EventRecorder | undefined;
  readonly nodeName: string;
  /** How often the pool is looked at (default 0.5 s; an ADD that empties the pool nudges a look at once). */
  readonly pollMs?: number;
  /**
   * How long not ready must last before the taint goes on when what blocks the pool may pass by
   * itself (EC2 throttling, a failed call: default 2 s, one failed pass is no outage). A reason
   * time does not fix (the subnet is exhausted, the ENIs are full, EC2 refuses the role, the node
   * is cordoned) taints at once, before the scheduler binds more pods to the node.
   */
  readonly confirmMs?: number;
  /** The condition is written again this often even when nothing changed (default 10 min). */
  readonly heartbeatMs?: number;
}

export interface NodeReadinessState {
  readonly mode: 'condition' | 'taint';
  readonly ready: boolean;
  readonly reason: string;
  readonly message: string;
  readonly since: string;
  readonly tainted: boolean;
  readonly lastError?: string;
}

export class NodeReadiness {
  readonly #d: NodeReadinessDeps;
  #current: (Readiness & { since: number }) | undefined;
  /** What the API holds: the condition last written, and whether the taint is on. */
  #written: { reason: string; ready: boolean; at: number } | undefined;
  #tainted = false;
  /** Taint mode: whether a taint an earlier run left has been looked for (at the first ready check). */
  #leftoverChecked = false;
  #lastError: string | undefined;
  readonly #loop = new SelfTimedLoop(async () => {
    await this.check();
    return this.#d.pollMs ?? 1000;
  });

  constructor(deps: NodeReadinessDeps) {
    this.#d = deps;
  }

  state(): NodeReadinessState | undefined {
    const c = this.#current;
    if (c === undefined) return undefined;
    return {
      mode: this.#d.mode,
      ready: c.ready,
      reason: c.reason,
      message: c.message,
      since: new Date(c.since).toISOString(),
      tainted: this.#tainted,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  start(): void {
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
  }

  /** Look now (an ADD took the pool's last free address): the taint need not wait for the next poll. */
  nudge(): void {
    this.#loop.nudge();
  }

  /** One look at the pool: the condition written when it changed, the taint put on or taken off. */
  async check(): Promise<void> {
    const now = this.#d.now();
    const pool = this.#d.pool();
    const r = readinessOf(pool);
    const prior = this.#current;
    if (prior === undefined || prior.ready !== r.ready || prior.reason !== r.reason) {
      this.#current = { ...r, since: now };
      if (prior !== undefined) {
        const level = r.ready ? 'info' : 'warn';
        this.#d.log[level]('node network readiness changed', {
          ready: r.ready,
          reason: r.reason,
          message: r.message,
        });
      }
    } else this.#current = { ...r, since: prior.since };
    try {
      await this.#writeCondition(now);
      if (this.#d.mode === 'taint') await this.#keepTaint(now, pool);
      if (this.#lastError !== undefined) this.#d.log.info('node readiness: the Kubernetes API answers again');
      this.#lastError = undefined;
    } catch (err) {
      const text = errorText(err);
      if (text !== this.#lastError)
        this.#d.log.warn('node readiness: cannot write to the node; retrying', { error: text });
      this.#lastError = text;
    }
  }

  async #writeCondition(now: number): Promise<void> {
    const c = this.#current!;
    const w = this.#written;
    const due =
      w === undefined ||
      w.ready !== c.ready ||
      w.reason !== c.reason ||
      now - w.at >= (this.#d.heartbeatMs ?? 600_000);
    if (!due) return;
    await this.#d.conditions.set({
      type: NETWORK_READY_CONDITION,
      status: c.ready ? 'True' : 'False',
      reason: c.reason,
      message: c.message,
      lastTransitionTime: c.since,
      lastHeartbeatTime: now,
    });
    this.#written = { reason: c.reason, ready: c.ready, at: now };
  }

  /**
   * On after not ready held for `confirmMs`; off (hysteresis) once a warm target's worth is free,
   * or some is free and the pool can grow again, so one address freed does not flap the taint.
   */
  async #keepTaint(now: number, pool: PoolReadiness): Promise<void> {
    const taints = this.#d.taints;
    if (taints === undefined) return;
    const c = this.#current!;
    // A taint of this key an earlier run left is this agent's (one owner per taint): a ready node
    // takes it off at once.
    if (!this.#leftoverChecked && c.ready) {
      if ((await taints.remove(IP_EXHAUSTED_TAINT.key)) === 'removed')
        this.#d.log.info('node untainted: an earlier run left the taint; addresses are free', {
          taint: IP_EXHAUSTED_TAINT.key,
        });
      this.#leftoverChecked = true;
      return;
    }
    const confirm = LASTING_REASONS.has(c.reason) ? 0 : (this.#d.confirmMs ?? 2000);
    if (!this.#tainted && !c.ready && now - c.since >= confirm) {
      await taints.add(IP_EXHAUSTED_TAINT);
      this.#tainted = true;
      this.#leftoverChecked = true;
      this.#d.log.warn('node tainted: no address is free and the pool cannot grow', {
        taint: IP_EXHAUSTED_TAINT.key,
        reason: c.reason,
      });
      this.#event(
        'Warning',
        'IpExhaustedTainted',
        `tainted ${IP_EXHAUSTED_TAINT.key}:NoSchedule: ${c.reason}: ${c.message}`,
      );
      return;
    }
    const recovered =
      pool.free >= pool.warmWorth || (pool.free > 0 && pool.blocked === null && pool.roomToGrow);
    if (this.#tainted && recovered) {
      await taints.remove(IP_EXHAUSTED_TAINT.key);
      this.#tainted = false;
      this.#d.log.info('node untainted: addresses are free again', {
        taint: IP_EXHAUSTED_TAINT.key,
        free: pool.free,
      });
      this.#event(
        'Normal',
        'IpExhaustedUntainted',
        `removed taint ${IP_EXHAUSTED_TAINT.key}: ${pool.free} addresses free`,
      );
    }
  }

  #event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.#d.events?.emit({
      involved: { kind: 'Node', name: this.#d.nodeName, uid: this.#d.nodeName },
      type,
      reason,
      message,
    });
  }
}

export interface MaxPodsCheck {
  /** The node as the API answers it (its `status.capacity.pods` is kubelet's maxPods). */
  readonly readNode: () => Promise<unknown>;
  readonly maxPodsOf: (node: unknown) => number | undefined;
  /** Pods the node can give an address in its mode (max-pods.ts addressablePods). */
  readonly addressable: number;
  readonly mode: string;
  readonly nodeName: string;
  readonly events?: EventRecorder | undefined;
  readonly log: Logger;
}

/**
 * Once at start: a kubelet whose maxPods is above what the node can address sends pods here that
 * can never get an address (they wait in ContainerCreating); a Warning event on the node says so.
 * Returns whether it warned. An API that does not answer is logged, not retried.
 */
export async function warnIfMaxPodsTooHigh(c: MaxPodsCheck): Promise<boolean> {
  let maxPods: number | undefined;
  try {
    maxPods = c.maxPodsOf(await c.readNode());
  } catch (err) {
    c.log.warn("cannot read the node's maxPods; not checked against its addresses", {
      error: errorText(err),
    });
    return false;
  }
  if (maxPods === undefined || maxPods <= c.addressable) return false;
  const message = `kubelet maxPods ${maxPods} is above the ${c.addressable} pods this node can address in ${c.mode}: pods past ${c.addressable} wait in ContainerCreating; lower maxPods (upstream's max-pods calculator) or enable prefix delegation`;
  c.log.warn('kubelet maxPods exceeds what the node can address', {
    maxPods,
    addressable: c.addressable,
    mode: c.mode,
  });
  c.events?.emit({
    involved: { kind: 'Node', name: c.nodeName, uid: c.nodeName },
    type: 'Warning',
    reason: 'MaxPodsExceedsAddresses',
    message,
  });
  return true;
}

/**
 * Free addresses that count as a warm target's worth (the taint's hysteresis): WARM_IP_TARGET when
 * set, else in prefix mode WARM_PREFIX_TARGET /28s, else WARM_ENI_TARGET ENIs' worth; at least one.
 */
export function warmTargetWorth(t: {
  readonly warmIpTarget?: number | undefined;
  readonly warmEniTarget: number;
  readonly warmPrefixTarget?: number | undefined;
  readonly prefixMode: boolean;
  readonly secondaryIpsPerEni: number;
}): number {
  if ((t.warmIpTarget ?? 0) > 0) return t.warmIpTarget ?? 1;
  if (t.prefixMode) return Math.max(1, (t.warmPrefixTarget ?? 0) * 16);
  return Math.max(1, t.warmEniTarget * t.secondaryIpsPerEni);
}
