// The node's trunk ENI, for pods with their own security groups. With ENABLE_POD_ENI the agent
// labels its node `vpc.amazonaws.com/has-trunk-attached=false` until it has a usable trunk (for
// VPC resource controllers that read the label; current ones read the CNINode's
// SecurityGroupsForPods, loops/cni-node.ts), finds the trunk the controller attached through EC2
// (interface type `trunk`), brings its link up with vpcnet's MTU, and then labels the node
// `true`. It keeps checking the link every interval (it may be set down by hand).
//
// The controller places the trunk when it is first asked, and a controller reads the label's mere
// presence as the request: under custom networking the label waits until the CNINode names the
// ENIConfig, or the trunk (and every branch ENI after it) would land in the node's own subnet.
import type { EniInfo } from '../../cloud/cloud.ts';
import type { Dataplane } from '../../dataplane/dataplane.ts';
import { errorText } from '../../infra/error-text.ts';
import { subnetGateway } from '../../infra/ipv4.ts';
import type { Logger } from '../../infra/log.ts';
import { PeriodicLoop, type Timers } from '../../infra/periodic.ts';
import { MAIN_TABLE } from '../../plan/views.ts';
import { HAS_TRUNK_LABEL, type NodeLabels } from '../../pods/node/node-labels.ts';
import type { TrunkLink } from '../context.ts';

export interface TrunkWatcherDeps {
  readonly manager: { refreshEnis(): Promise<EniInfo[]>; trunkEni(): EniInfo | undefined };
  readonly dataplane: Dataplane;
  /** The node's labels in the Kubernetes API; absent without an API. */
  readonly labels: NodeLabels | undefined;
  readonly log: Logger;
  readonly mtu: number;
  readonly intervalMs: number;
  readonly timers?: Timers;
  /** A check failed, the one before serving (`start`) or a later one (`loop`); for metrics. */
  readonly failed?: (when: 'start' | 'loop') => void;
  /** Whether the controller may be asked for a trunk yet (absent: at once). */
  readonly mayAskForTrunk?: () => boolean;
}

export class TrunkWatcher {
  readonly #d: TrunkWatcherDeps;
  readonly #loop: PeriodicLoop;
  #link: TrunkLink | undefined;
  /** The label value the API has (as far as this agent knows). */
  #labelled: string | undefined;
  #toldWaiting = false;

  constructor(deps: TrunkWatcherDeps) {
    this.#d = deps;
    this.#loop = new PeriodicLoop({
      run: () => this.check(),
      intervalMs: deps.intervalMs,
      firstAfterMs: deps.intervalMs,
      unref: true,
      onFailure: (err, failures) => {
        deps.failed?.('loop');
        deps.log.warn('trunk ENI check failed; will retry', { error: errorText(err), failures });
      },
      ...(deps.timers === undefined ? {} : { timers: deps.timers }),
    });
  }

  /** The trunk's link, once configured. */
  current(): TrunkLink | undefined {
    return this.#link;
  }

  /** One check now (at start, before serving), then one every interval. */
  async start(): Promise<void> {
    await this.check().catch((err: unknown) => {
      this.#d.failed?.('start');
      this.#d.log.warn('trunk ENI not ready at start; will retry', { error: errorText(err) });
    });
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Finds and configures the trunk; labels the node with what it found. Resolves true once ready. */
  async check(): Promise<boolean> {
    const { manager, dataplane, log } = this.#d;
    let eni = manager.trunkEni();
    if (!eni) {
      await manager.refreshEnis();
      eni = manager.trunkEni();
    }
    if (!eni) {
      if (this.#d.mayAskForTrunk?.() === false) {
        if (!this.#toldWaiting) {
          log.info(
            "trunk ENI: not asked for until the CNINode names the node's ENIConfig (custom networking)",
          );
        }
        this.#toldWaiting = true;
        return false;
      }
      await this.#label('false');
      return false;
    }
    const dev = await dataplane.setupEni({
      mac: eni.mac,
      deviceNumber: eni.deviceNumber,
      primaryIp: eni.primaryIp,
      subnetCidr: eni.subnetCidr,
      gateway: subnetGateway(eni.subnetCidr),
      // A trunk carries no addresses of its own for pods: its link is only brought up.
      routeTable: MAIN_TABLE,
      mtu: this.#d.mtu,
    });
    if (this.#link?.dev !== dev) {
      log.info('trunk ENI ready', { eni: eni.eniId, device: eni.deviceNumber, link: dev });
    }
    this.#link = { dev, mac: eni.mac.toLowerCase(), eniId: eni.eniId };
    await this.#label('true');
    return true;
  }

  async #label(value: string): Promise<void> {
    if (!this.#d.labels || this.#labelled === value) return;
    await this.#d.labels.set(HAS_TRUNK_LABEL, value);
    this.#labelled = value;
    this.#d.log.info('node labelled', { label: HAS_TRUNK_LABEL, value });
  }
}
