// The pods of this node, kept by a list+watch of the Kubernetes API (pod-informer.ts). ADD reads the
// cache, with bounded staleness: a pod the cache does not know, or knows with another UID, or that
// asks for a branch ENI and has no annotation yet (the watch may not have delivered the
// controller's write), costs one GET. While the watch is down, every lookup is a GET.
import { errorText } from '../../infra/error-text.ts';
import type { Logger } from '../../infra/log.ts';
import type { KubeApiConfig } from '../kube-api-config.ts';
import { apiStatus, KubeClient } from '../kube-client.ts';
import { POD_ENI_ANNOTATION } from '../pod-eni.ts';
import type { PodMetadata } from '../pod-metadata.ts';
import { PodInformer } from './pod-informer.ts';
import type { PodSource } from './pod-source.ts';

export interface PodCacheOptions {
  readonly api: KubeApiConfig;
  readonly nodeName: string;
  readonly log: Logger;
  /** A GET that takes longer fails the ADD (try again later). */
  readonly timeoutMs?: number;
  /** First wait before watching again after the watch failed (it grows with each failure). */
  readonly retryMs?: number;
  /** How long the server keeps one watch open (tests shorten it). */
  readonly watchSeconds?: number;
}

export class KubePodCache implements PodSource {
  readonly #o: PodCacheOptions;
  readonly #client: KubeClient;
  readonly #informer: PodInformer;
  /** Lookups answered from the cache and by a GET (introspection, tests). */
  readonly counts = { cache: 0, get: 0 };

  constructor(options: PodCacheOptions) {
    this.#o = options;
    this.#client = new KubeClient(options.api, { timeoutMs: options.timeoutMs ?? 3000 });
    this.#informer = new PodInformer({
      client: this.#client,
      nodeName: options.nodeName,
      log: options.log,
      ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
      ...(options.watchSeconds === undefined ? {} : { watchSeconds: options.watchSeconds }),
    });
  }

  /** Starts watching; resolves once the first list and watch are open, or the first attempt failed. */
  async start(): Promise<void> {
    await this.#informer.start();
  }

  async stop(): Promise<void> {
    await this.#informer.stop();
    this.#client.close();
  }

  async lookup(namespace: string, name: string, uid?: string): Promise<PodMetadata | undefined> {
    const pod = this.#informer.watching ? this.#informer.get(namespace, name) : undefined;
    if (pod) {
      const fresh =
        (uid === undefined || pod.uid === uid) &&
        !(pod.requestsPodEni && pod.annotations[POD_ENI_ANNOTATION] === undefined);
      if (fresh) {
        this.counts.cache++;
        return pod;
      }
    }
    return this.#get(namespace, name);
  }

  read(namespace: string, name: string): Promise<PodMetadata | undefined> {
    return this.#get(namespace, name);
  }

  async listOnNode(): Promise<readonly PodMetadata[]> {
    if (this.#informer.watching) return this.#informer.list();
    const what = `list pods of node ${this.#o.nodeName} from ${this.#o.api.baseUrl}`;
    try {
      return (await this.#client.listPodsOnNode(this.#o.nodeName)).pods;
    } catch (err) {
      throw new Error(`${what}: ${errorText(err)}`, { cause: err });
    }
  }

  async #get(namespace: string, name: string): Promise<PodMetadata | undefined> {
    this.counts.get++;
    const what = `GET pod ${namespace}/${name} from ${this.#o.api.baseUrl}`;
    try {
      return await this.#client.getPod(namespace, name);
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw new Error(`${what}: ${errorText(err)}`, { cause: err });
    }
  }
}
