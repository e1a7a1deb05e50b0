// The emulated VPC resource controller (what EKS runs for ENABLE_POD_ENI): it watches nodes and
// their CNINodes for what a node wants (node-features.ts: a trunk ENI, custom networking), pods for
// deletion, and gives pods branch ENIs on request (the admin API's POST /admin/pod-eni plays the
// pod webhook + controller). All its work runs one item at a time, so VLAN first fit never races
// and a release queued before an assignment is done before it.
//
// A node it could not give a trunk (its ENIConfig missing) is looked at again when an ENIConfig
// changes: the real controller retries at the node's next event, which kubelets send all the
// time and the emulator's nodes do not.
import { errorText } from '../../infra/error-text.ts';
import type { ObjectStore, WatchEvent } from '../kube/object-store.ts';
import { isJsonObject } from '../kube/objects.ts';
import type { VpcOperations } from '../vpc/operations.ts';
import { assignBranch, type PodEniRequest, podIdentity, releaseBranches } from './branch-controller.ts';
import type { PodEniEntry } from './names.ts';
import { customNetworkingOf, type NodeStores, wantsTrunk } from './node-features.ts';
import { ensureTrunk } from './trunk-controller.ts';

export interface ResourceControllerDeps extends NodeStores {
  readonly ops: VpcOperations;
  readonly pods: ObjectStore;
  readonly log: (line: Record<string, unknown>) => void;
}

export class ResourceController {
  readonly #deps: ResourceControllerDeps;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: ResourceControllerDeps) {
    this.#deps = deps;
  }

  /** Subscribes to node, CNINode, ENIConfig and pod events; returns the unsubscribe. */
  start(): () => void {
    const { nodes, cniNodes, eniConfigs, pods } = this.#deps;
    const offs = [
      nodes.subscribe((e) => this.#onNodeObject(e)),
      cniNodes.subscribe((e) => this.#onNodeObject(e)),
      eniConfigs.subscribe(() => {
        for (const node of nodes.list()) this.#considerNode(nameOf(node));
      }),
      pods.subscribe((e) => this.#onPod(e)),
    ];
    return () => {
      for (const off of offs) off();
    };
  }

  assignPodEni(req: PodEniRequest): Promise<PodEniEntry> {
    const { ops, pods } = this.#deps;
    return this.#serial(() =>
      assignBranch(ops, pods, req, (node) => customNetworkingOf(this.#deps, node)?.subnetId),
    );
  }

  /** A node or its CNINode (named like it) changed. */
  #onNodeObject(e: WatchEvent): void {
    if (e.type === 'DELETED') return;
    this.#considerNode(nameOf(e.object));
  }

  #considerNode(node: string | undefined): void {
    if (node === undefined) return;
    const log = this.#deps.log;
    this.#serial(async () => {
      if (!wantsTrunk(this.#deps, node)) return undefined;
      return ensureTrunk(this.#deps.ops, node, customNetworkingOf(this.#deps, node));
    }).then(
      (outcome) => {
        if (outcome?.kind === 'attached') log({ msg: 'controller attached a trunk ENI', node, ...outcome });
        if (outcome?.kind === 'refused')
          log({ msg: 'controller gives no trunk ENI', node, reason: outcome.reason });
      },
      (err: unknown) => log({ msg: 'controller could not attach a trunk ENI', node, error: errorText(err) }),
    );
  }

  #onPod(e: WatchEvent): void {
    if (e.type !== 'DELETED') return;
    const { uid } = podIdentity(e.object);
    const log = this.#deps.log;
    this.#serial(() => releaseBranches(this.#deps.ops, uid)).then(
      (released) => {
        if (released.length > 0) log({ msg: 'controller released branch ENIs', podUid: uid, enis: released });
      },
      (err: unknown) =>
        log({ msg: 'controller could not release branch ENIs', podUid: uid, error: errorText(err) }),
    );
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(fn);
    this.#queue = result.catch(() => undefined);
    return result;
  }
}

function nameOf(object: Record<string, unknown>): string | undefined {
  const meta = isJsonObject(object.metadata) ? object.metadata : {};
  return typeof meta.name === 'string' ? meta.name : undefined;
}
