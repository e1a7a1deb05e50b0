// The node's CNINode, kept as the settings say: how the agent tells the VPC resource controller
// what the node wants (src/pods/node/cni-node.ts). With ENABLE_POD_ENI it lists `SecurityGroupsForPods`
// (the controller then attaches a trunk ENI and gives pods branch ENIs), and with custom
// networking too `CustomNetworking` naming the node's ENIConfig (the controller then puts the
// trunk and the branch ENIs into that ENIConfig's subnet, as the pool puts the node's ENIs). Upstream
// writes these two features alone and under the same conditions; unlike upstream the agent also
// takes away what the settings no longer ask for (pod ENIs turned off: the controller stops giving
// the node branch ENIs its pods would not get), and it creates the CNINode when the controller has
// not yet. Features it does not manage (another writer's) are kept.
//
// A pass at start, then one every interval: a deleted CNINode comes back, a relabelled node's
// ENIConfig name is written. A pass reads before it writes and writes only a change, with the
// resourceVersion it read; a conflict (another writer in between) is read again at once.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import { PeriodicLoop, type Timers } from '../../infra/periodic.ts';
import { apiStatus } from '../../pods/kube-client.ts';
import {
  type CniNodeFeature,
  type CniNodes,
  CUSTOM_NETWORKING,
  SECURITY_GROUPS_FOR_PODS,
} from '../../pods/node/cni-node.ts';

/** The features the agent writes and removes; any other is left as it is. */
const MANAGED = new Set([SECURITY_GROUPS_FOR_PODS, CUSTOM_NETWORKING]);

/** Tries of one pass when the object keeps changing between its read and the write. */
const CONFLICT_TRIES = 3;

/**
 * What the settings ask of the controller. Custom networking is told only with pod ENIs, as
 * upstream does: without a trunk the controller has nothing to place. The ENIConfig named
 * `default` counts like any other (upstream leaves it out, and the controller then puts trunk
 * and branch ENIs into the node's subnet while the pool uses that ENIConfig's).
 */
export function wantedFeatures(podEni: boolean, eniConfigName: string | undefined): CniNodeFeature[] {
  if (!podEni) return [];
  const sgp: CniNodeFeature = { name: SECURITY_GROUPS_FOR_PODS };
  return eniConfigName === undefined ? [sgp] : [sgp, { name: CUSTOM_NETWORKING, value: eniConfigName }];
}

function sameFeature(a: CniNodeFeature, b: CniNodeFeature): boolean {
  return a.name === b.name && (a.value ?? '') === (b.value ?? '');
}

/**
 * The feature list to write so that `current` lists exactly `wanted` of the managed features
 * (others kept, in their order); undefined when it does already.
 */
export function featuresToWrite(
  current: readonly CniNodeFeature[],
  wanted: readonly CniNodeFeature[],
): CniNodeFeature[] | undefined {
  const managed = current.filter((f) => MANAGED.has(f.name));
  const same =
    managed.length === wanted.length && wanted.every((w) => managed.some((m) => sameFeature(m, w)));
  if (same) return undefined;
  return [...current.filter((f) => !MANAGED.has(f.name)), ...wanted];
}

export type CniNodeOutcome = 'created' | 'updated' | 'unchanged' | 'absent' | 'deleting';

export interface CniNodeKeeperDeps {
  readonly cniNodes: CniNodes;
  /** ENABLE_POD_ENI. */
  readonly podEni: boolean;
  /** With custom networking: the name of the node's ENIConfig, read from the node (not the ENIConfig). */
  readonly eniConfigName?: () => Promise<string>;
  readonly log: Logger;
  readonly intervalMs: number;
  readonly timers?: Timers;
}

export class CniNodeKeeper {
  readonly #d: CniNodeKeeperDeps;
  readonly #loop: PeriodicLoop;
  #told = false;

  constructor(deps: CniNodeKeeperDeps) {
    this.#d = deps;
    this.#loop = new PeriodicLoop({
      run: () => this.check(),
      intervalMs: deps.intervalMs,
      retryBaseMs: Math.min(1000, deps.intervalMs),
      unref: true,
      onFailure: (err, failures, retryInMs) =>
        deps.log[failures === 1 ? 'warn' : 'debug']('CNINode not as the settings want it; will retry', {
          error: explained(err),
          failures,
          retryInMs,
        }),
      ...(deps.timers === undefined ? {} : { timers: deps.timers }),
    });
  }

  /**
   * A pass at once, then one every interval. Not awaited by the agent's start: regular pods need
   * no API, and a slow API must not hold them up.
   */
  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /**
   * Whether the CNINode has listed what the settings want at least once: from then on the
   * controller knows it (its cache keeps it), whatever later passes meet.
   */
  get told(): boolean {
    return this.#told;
  }

  /** Makes the node's CNINode list what the settings want; says what it found or did. */
  async check(): Promise<CniNodeOutcome> {
    const { podEni, eniConfigName } = this.#d;
    const wanted = wantedFeatures(podEni, podEni && eniConfigName ? await eniConfigName() : undefined);
    for (let attempt = 1; ; attempt++) {
      try {
        const outcome = await this.#converge(wanted);
        if (outcome !== 'deleting') this.#told = true;
        return outcome;
      } catch (err) {
        // 409: created by the controller, or changed by another writer, since it was read.
        if (apiStatus(err) !== 409 || attempt >= CONFLICT_TRIES) throw err;
      }
    }
  }

  async #converge(wanted: readonly CniNodeFeature[]): Promise<CniNodeOutcome> {
    const { cniNodes, log } = this.#d;
    const current = await cniNodes.read();
    if (current === undefined) {
      // Nothing to say to the controller: the CNINode is the controller's to create.
      if (wanted.length === 0) return 'absent';
      await cniNodes.create(wanted);
      log.info('CNINode created with the features the settings want', { features: wanted });
      return 'created';
    }
    // Marked for deletion (the controller's finalizer holds it): written now, the features would
    // go with it. The controller re-creates it from its last spec; a later pass checks that one.
    if (current.deleting) return 'deleting';
    const next = featuresToWrite(current.features, wanted);
    if (next === undefined) return 'unchanged';
    await cniNodes.setFeatures(current.resourceVersion, next);
    log.info('CNINode features set as the settings want them', { before: current.features, features: next });
    return 'updated';
  }
}

/** The error, with what to do about a refusal of the agent's rights. */
function explained(err: unknown): string {
  const text = errorText(err);
  if (apiStatus(err) !== 403) return text;
  return `${text} (the agent's ClusterRole needs get, create and patch on cninodes.vpcresources.k8s.aws: deploy/base/cluster-role.yaml)`;
}
