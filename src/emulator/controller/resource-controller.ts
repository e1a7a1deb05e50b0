// The emulated VPC resource controller (what EKS runs for ENABLE_POD_ENI): it watches nodes for
// the trunk request label and pods for deletion, and gives pods branch ENIs on request (the
// admin API's POST /admin/pod-eni plays the pod webhook + controller). All its work runs one item
// at a time, so VLAN first fit never races and a release queued before an assignment is done
// before it.
import { errorText } from '../../infra/error-text.ts';
import type { ObjectStore, WatchEvent } from '../kube/object-store.ts';
import { isJsonObject } from '../kube/objects.ts';
import type { VpcOperations } from '../vpc/operations.ts';
import { assignBranch, type PodEniRequest, podIdentity, releaseBranches } from './branch-controller.ts';
import { HAS_TRUNK_ATTACHED_LABEL, type PodEniEntry } from './names.ts';
import { ensureTrunk } from './trunk-controller.ts';

export interface ResourceControllerDeps {
  readonly ops: VpcOperations;
  readonly pods: ObjectStore;
  readonly nodes: ObjectStore;
  readonly log: (line: Record<string, unknown>) => void;
}

export class ResourceController {
  readonly #deps: ResourceControllerDeps;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: ResourceControllerDeps) {
    this.#deps = deps;
  }

  /** Subscribes to node and pod events; returns the unsubscribe. */
  start(): () => void {
    const offNodes = this.#deps.nodes.subscribe((e) => this.#onNode(e));
    const offPods = this.#deps.pods.subscribe((e) => this.#onPod(e));
    return () => {
      offNodes();
      offPods();
    };
  }

  assignPodEni(req: PodEniRequest): Promise<PodEniEntry> {
    return this.#serial(() => assignBranch(this.#deps.ops, this.#deps.pods, req));
  }

  #onNode(e: WatchEvent): void {
    if (e.type === 'DELETED') return;
    const meta = isJsonObject(e.object.metadata) ? e.object.metadata : {};
    const labels = isJsonObject(meta.labels) ? meta.labels : {};
    // `true` means the agent has configured its trunk; only `false` is a request.
    if (labels[HAS_TRUNK_ATTACHED_LABEL] !== 'false' || typeof meta.name !== 'string') return;
    const node = meta.name;
    const log = this.#deps.log;
    this.#serial(() => ensureTrunk(this.#deps.ops, node)).then(
      (outcome) => {
        if (outcome.kind === 'attached') log({ msg: 'controller attached a trunk ENI', node, ...outcome });
        if (outcome.kind === 'refused')
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
