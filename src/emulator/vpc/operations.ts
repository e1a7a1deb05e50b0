// State changes that have a kernel side. The fabric hook runs AFTER the state change and before
// the caller is answered, so when EC2 replies the link/route exists. A fabric failure undoes the
// state change (and any fabric step already done) and surfaces as 500 InternalError.
import { errorText } from '../../infra/error-text.ts';
import type { Fabric, FabricEni, LaunchedInstance } from '../api.ts';
import { Ec2Error } from '../ec2/error.ts';
import type { Ipv6Assigned, Ipv6AssignRequest } from './eni-ipv6.ts';
import { type EniTraffic, eniTraffic } from './eni-traffic.ts';
import type {
  AssignRequest,
  CreateEniRequest,
  Eni,
  EniAttachment,
  Instance,
  LaunchRequest,
  TrunkAssociation,
  VpcState,
} from './state.ts';
import { prefixAddresses } from './subnet-pool.ts';

type Step = () => Promise<void>;

/** The fabric following an assignment (`assign`) or unassignment of `ips`, with its undo. */
function addressStep(fabric: Fabric, fe: FabricEni, ips: readonly string[], assign: boolean) {
  const on: Step = () => fabric.addressesAssigned(fe, ips);
  const off: Step = () => fabric.addressesUnassigned(fe, ips);
  return assign ? { run: on, undo: off } : { run: off, undo: on };
}

/** IPv6 routes to an ENI: each single address as a /128, each delegated /80 as itself. */
function ipv6Step(fabric: Fabric, fe: FabricEni, given: Ipv6Assigned, assign: boolean) {
  const cidrs = [...given.addresses.map((a) => `${a}/128`), ...given.prefixes];
  const on: Step = async () => fabric.ipv6RoutesAdded?.(fe, cidrs);
  const off: Step = async () => fabric.ipv6RoutesRemoved?.(fe, cidrs);
  return assign ? { run: on, undo: off } : { run: off, undo: on };
}

/** An instance came or went (the Kubernetes slice keeps a Node object per named instance by it). */
export interface InstanceEvent {
  readonly type: 'launched' | 'terminated';
  readonly instance: Instance;
}

export class VpcOperations {
  readonly state: VpcState;
  readonly #fabric: Fabric | undefined;
  readonly #log: (line: Record<string, unknown>) => void;
  /** CreateNetworkInterface idempotency: ClientToken -> ENI ID. */
  readonly createdByClientToken = new Map<string, string>();
  /** Told after each launch and termination; a listener must not throw. */
  readonly instanceListeners = new Set<(e: InstanceEvent) => void>();
  /** With a fabric, kernel steps of different calls must not interleave (attach racing detach). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(state: VpcState, fabric: Fabric | undefined, log: (line: Record<string, unknown>) => void) {
    this.state = state;
    this.#fabric = fabric;
    this.#log = log;
  }

  fabricEni(eni: Eni): FabricEni {
    const pool = this.state.subnet(eni.subnetId);
    return {
      eniId: eni.eniId,
      mac: eni.mac,
      primaryIp: eni.primaryIp,
      subnetCidr: pool.spec.cidr,
      gateway: pool.gateway,
      ...(pool.spec.ipv6Cidr === undefined
        ? {}
        : { subnetIpv6Cidr: pool.spec.ipv6Cidr, primaryIpv6: eni.ipv6Addresses[0] }),
    };
  }

  createEni(req: CreateEniRequest): Eni {
    return this.state.createEni(req);
  }

  deleteEni(eniId: string): void {
    this.state.deleteEni(eniId);
  }

  launch(req: LaunchRequest): Promise<LaunchedInstance> {
    return this.#serial(async () => {
      const { instance, primaryEni } = this.state.launch(req);
      const undo = () => {
        this.state.forceDetach(primaryEni);
        this.state.deleteEni(primaryEni.eniId);
        this.state.removeInstance(instance.instanceId);
      };
      await this.#withRollback(undo, [this.#attachSteps(instance, primaryEni, 0)]);
      for (const listener of this.instanceListeners) listener({ type: 'launched', instance });
      const pool = this.state.subnet(instance.subnetId);
      return {
        instanceId: instance.instanceId,
        instanceType: instance.instanceType,
        primaryEni: { eniId: primaryEni.eniId, mac: primaryEni.mac, primaryIp: primaryEni.primaryIp },
        subnet: { subnetId: pool.spec.subnetId, cidr: pool.spec.cidr, gateway: pool.gateway },
      };
    });
  }

  /** DeleteOnTermination ENIs are deleted, the others detached. Kernel errors are logged, not fatal. */
  terminate(instanceId: string): Promise<void> {
    return this.#serial(async () => {
      const instance = this.state.instance(instanceId);
      for (const eni of this.state.enisOf(instanceId).reverse()) {
        for (const branch of this.state.branchesOf(eni.eniId)) {
          const { association } = this.state.disassociateTrunk(branch.trunkAssociation!.associationId);
          try {
            for (const step of this.#branchSteps(branch, association, 'disassociate')) await step.run();
          } catch (err) {
            this.#log({
              msg: 'fabric branch removal failed during termination',
              eniId: branch.eniId,
              error: errorText(err),
            });
          }
        }
        const eniAttachment = this.state.forceDetach(eni);
        if (eniAttachment === undefined) continue;
        try {
          for (const step of this.#detachSteps(instance, eni, eniAttachment.deviceIndex)) await step.run();
        } catch (err) {
          this.#log({
            msg: 'fabric detach failed during termination',
            eniId: eni.eniId,
            error: errorText(err),
          });
        }
        if (eniAttachment.deleteOnTermination) this.state.deleteEni(eni.eniId);
      }
      this.state.removeInstance(instanceId);
      for (const listener of this.instanceListeners) listener({ type: 'terminated', instance });
    });
  }

  attach(eniId: string, instanceId: string, deviceIndex: number): Promise<EniAttachment> {
    return this.#serial(async () => {
      const eniAttachment = this.state.attach(eniId, instanceId, deviceIndex);
      const eni = this.state.eni(eniId);
      const instance = this.state.instance(instanceId);
      await this.#withRollback(
        () => this.state.forceDetach(eni),
        [this.#attachSteps(instance, eni, deviceIndex)],
      );
      return eniAttachment;
    });
  }

  detach(attachmentId: string): Promise<void> {
    return this.#serial(async () => {
      const { eni, eniAttachment } = this.state.detach(attachmentId);
      const instance = this.state.instance(eniAttachment.instanceId);
      await this.#withRollback(
        () => this.state.restoreEniAttachment(eni, eniAttachment),
        [this.#detachSteps(instance, eni, eniAttachment.deviceIndex)],
      );
    });
  }

  assign(eniId: string, req: AssignRequest): Promise<string[]> {
    return this.#addressChange(
      eniId,
      () => this.state.assign(eniId, req),
      (fabric, fe, ips) => addressStep(fabric, fe, ips, true),
      (ips) => this.state.unassign(eniId, ips),
    );
  }

  unassign(eniId: string, ips: readonly string[]): Promise<void> {
    return this.#addressChange(
      eniId,
      () => this.state.unassign(eniId, ips),
      (fabric, fe) => addressStep(fabric, fe, ips, false),
      () => this.state.assign(eniId, { ips }),
    );
  }

  /** Prefixes as assign() does addresses: the fabric routes each prefix's 16 addresses to the ENI. */
  assignPrefixes(eniId: string, req: AssignRequest): Promise<string[]> {
    return this.#addressChange(
      eniId,
      () => this.state.assignPrefixes(eniId, req),
      (fabric, fe, prefixes) => addressStep(fabric, fe, prefixes.flatMap(prefixAddresses), true),
      (prefixes) => this.state.unassignPrefixes(eniId, prefixes),
    );
  }

  unassignPrefixes(eniId: string, prefixes: readonly string[]): Promise<void> {
    return this.#addressChange(
      eniId,
      () => this.state.unassignPrefixes(eniId, prefixes),
      (fabric, fe) => addressStep(fabric, fe, prefixes.flatMap(prefixAddresses), false),
      () => this.state.assignPrefixes(eniId, { ips: prefixes }),
    );
  }

  assignIpv6(eniId: string, req: Ipv6AssignRequest): Promise<Ipv6Assigned> {
    return this.#addressChange(
      eniId,
      () => this.state.assignIpv6(eniId, req),
      (fabric, fe, given) => ipv6Step(fabric, fe, given, true),
      (given) => this.state.unassignIpv6(eniId, given),
    );
  }

  unassignIpv6(eniId: string, gone: Ipv6Assigned): Promise<void> {
    return this.#addressChange(
      eniId,
      () => this.state.unassignIpv6(eniId, gone),
      (fabric, fe) => ipv6Step(fabric, fe, gone, false),
      () => {
        if (gone.addresses.length > 0) this.state.assignIpv6(eniId, { addresses: gone.addresses });
        if (gone.prefixes.length > 0) this.state.assignIpv6(eniId, { prefixes: gone.prefixes });
      },
    );
  }

  /**
   * One change of an ENI's addresses: the state first, then the fabric's routes for what changed;
   * when the fabric fails, both are undone (`undoState`, then the steps that ran).
   */
  #addressChange<T>(
    eniId: string,
    change: () => T,
    routes: (fabric: Fabric, fe: FabricEni, done: T) => { run: Step; undo: Step },
    undoState: (done: T) => unknown,
  ): Promise<T> {
    return this.#serial(async () => {
      const done = change();
      const eni = this.state.eni(eniId);
      const fabric = this.#fabricFor(eni);
      const steps = fabric === undefined ? [] : [routes(fabric, this.fabricEni(eni), done)];
      await this.#withRollback(() => undoState(done), [steps]);
      return done;
    });
  }

  associateTrunk(branchEniId: string, trunkEniId: string, vlanId: number): Promise<TrunkAssociation> {
    return this.#serial(async () => {
      const association = this.state.associateTrunk(branchEniId, trunkEniId, vlanId);
      const branch = this.state.eni(branchEniId);
      await this.#withRollback(
        () => this.state.disassociateTrunk(association.associationId),
        [this.#branchSteps(branch, association, 'associate')],
      );
      return association;
    });
  }

  disassociateTrunk(associationId: string): Promise<void> {
    return this.#serial(async () => {
      const { branch, association } = this.state.disassociateTrunk(associationId);
      await this.#withRollback(
        () => this.state.restoreTrunkAssociation(branch, association),
        [this.#branchSteps(branch, association, 'disassociate')],
      );
    });
  }

  /** Per ENI with a fabric link (branches included): packets the VPC received from it. */
  traffic(): Promise<EniTraffic[]> {
    // In line with the other fabric work, so that counts follow completed changes only.
    return this.#serial(() =>
      eniTraffic(
        this.state,
        this.#fabric,
        (e) => this.#fabricFor(e) !== undefined,
        (e) => this.fabricEni(e),
      ),
    );
  }

  #branchSteps(
    branch: Eni,
    association: TrunkAssociation,
    direction: 'associate' | 'disassociate',
  ): { run: Step; undo: Step }[] {
    const fabric = this.#fabricFor(this.state.eni(association.trunkEniId));
    if (fabric?.branchAssociated === undefined || fabric.branchDisassociated === undefined) return [];
    const trunk = this.fabricEni(this.state.eni(association.trunkEniId));
    const b = this.fabricEni(branch);
    const on = () => fabric.branchAssociated!(trunk, association.vlanId, b);
    const off = () => fabric.branchDisassociated!(trunk, association.vlanId, b);
    return [direction === 'associate' ? { run: on, undo: off } : { run: off, undo: on }];
  }

  /** The fabric applies only to ENIs attached to an instance that lives in a netns. */
  #fabricFor(eni: Eni): Fabric | undefined {
    if (this.#fabric === undefined || eni.attachment === undefined) return undefined;
    return this.state.instance(eni.attachment.instanceId).netns === undefined ? undefined : this.#fabric;
  }

  /** Attach: the link first, then routes for secondaries the ENI already had. */
  #attachSteps(instance: Instance, eni: Eni, deviceIndex: number): { run: Step; undo: Step }[] {
    const fabric = this.#fabric;
    const netns = instance.netns;
    if (fabric === undefined || netns === undefined) return [];
    const fe = this.fabricEni(eni);
    const ips = [...eni.secondaryIps];
    const steps = [
      {
        run: () => fabric.eniAttached(netns, deviceIndex, fe),
        undo: () => fabric.eniDetached(netns, deviceIndex, fe),
      },
    ];
    if (ips.length > 0) steps.push(addressStep(fabric, fe, ips, true));
    return steps;
  }

  /** Detach: routes of secondaries first, then the link. */
  #detachSteps(instance: Instance, eni: Eni, deviceIndex: number): { run: Step; undo: Step }[] {
    const fabric = this.#fabric;
    const netns = instance.netns;
    if (fabric === undefined || netns === undefined) return [];
    const fe = this.fabricEni(eni);
    const ips = [...eni.secondaryIps];
    const steps: { run: Step; undo: Step }[] = [];
    if (ips.length > 0) steps.push(addressStep(fabric, fe, ips, false));
    steps.push({
      run: () => fabric.eniDetached(netns, deviceIndex, fe),
      undo: () => fabric.eniAttached(netns, deviceIndex, fe),
    });
    return steps;
  }

  /** Run the fabric steps; on failure undo the done ones (reverse order), then the state change. */
  async #withRollback(undoState: () => unknown, groups: { run: Step; undo: Step }[][]): Promise<void> {
    const done: Step[] = [];
    try {
      for (const step of groups.flat()) {
        await step.run();
        done.push(step.undo);
      }
    } catch (err) {
      for (const undo of done.reverse()) {
        await undo().catch((e: unknown) =>
          this.#log({ msg: 'fabric rollback step failed', error: String(e) }),
        );
      }
      undoState();
      throw new Ec2Error('InternalError', `An internal error has occurred (fabric: ${errorText(err)})`, 500);
    }
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#fabric === undefined) return fn();
    const result = this.#queue.then(fn);
    this.#queue = result.catch(() => undefined);
    return result;
  }
}
