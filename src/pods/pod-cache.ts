// The pods of this node, kept by a list+watch of the Kubernetes API (resourceVersion resumes the
// watch; an expired version, 410, makes the client list again). ADD reads the cache, with bounded
// staleness: a pod the cache does not know, or knows with another UID, or that asks for a branch
// ENI and has no annotation yet (the watch may not have delivered the controller's write), costs one
// GET. While the watch is down, every lookup is a GET.
import { errorText } from '../infra/error-text.ts';
import type { Logger } from '../infra/log.ts';
import type { KubeApiConfig } from './kube-api-config.ts';
import { apiStatus, type KubeClient, loadKubeClient, withTimeout } from './kube-client.ts';
import { POD_ENI_ANNOTATION } from './pod-eni.ts';
import { type PodMetadata, parsePod } from './pod-metadata.ts';
import type { PodSource } from './pod-source.ts';

export interface PodCacheOptions {
  readonly api: KubeApiConfig;
  readonly nodeName: string;
  readonly log: Logger;
  /** A GET that takes longer fails the ADD (try again later). */
  readonly timeoutMs?: number;
  /** Wait before watching again after the watch failed. */
  readonly retryMs?: number;
}

type Informer = InstanceType<KubeClient['k8s']['ListWatch']>;

export class KubePodCache implements PodSource {
  readonly #o: PodCacheOptions;
  #client: KubeClient | undefined;
  #informer: Informer | undefined;
  /** The watch is connected: cached pods are at most one event old. */
  #watching = false;
  #stopped = false;
  #retry: NodeJS.Timeout | undefined;
  /** Lookups answered from the cache and by a GET (introspection, tests). */
  readonly counts = { cache: 0, get: 0 };

  constructor(options: PodCacheOptions) {
    this.#o = options;
  }

  /** Loads the client and starts watching; resolves once the first list arrived or failed. */
  async start(): Promise<void> {
    this.#client = await loadKubeClient(this.#o.api);
    const { k8s, config, core } = this.#client;
    const selector = `spec.nodeName=${this.#o.nodeName}`;
    const informer = new k8s.ListWatch(
      '/api/v1/pods',
      new k8s.Watch(config),
      () => core.listPodForAllNamespaces({ fieldSelector: selector }),
      false,
      undefined,
      selector,
    );
    informer.on('connect', () => {
      this.#watching = true;
    });
    informer.on('error', (err: unknown) => {
      this.#watching = false;
      if (this.#stopped) return;
      this.#o.log.warn('pod watch failed; lookups go to the API until it is back', { error: errorText(err) });
      this.#retry = setTimeout(() => void this.#restart(), this.#o.retryMs ?? 5000);
      this.#retry.unref();
    });
    this.#informer = informer;
    await this.#restart();
  }

  async #restart(): Promise<void> {
    if (this.#stopped || !this.#informer) return;
    await this.#informer.start().catch((err: unknown) => {
      this.#o.log.warn('pod watch could not start', { error: errorText(err) });
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    await this.#informer?.stop();
  }

  async lookup(namespace: string, name: string, uid?: string): Promise<PodMetadata | undefined> {
    const cached = this.#watching ? this.#informer?.get(name, namespace) : undefined;
    if (cached) {
      const pod = parsePod(cached);
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

  async listOnNode(): Promise<readonly PodMetadata[]> {
    if (this.#watching && this.#informer) return this.#informer.list().map(parsePod);
    this.#client ??= await loadKubeClient(this.#o.api);
    const what = `list pods of node ${this.#o.nodeName} from ${this.#o.api.baseUrl}`;
    try {
      const list = await withTimeout(
        this.#client.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${this.#o.nodeName}` }),
        this.#o.timeoutMs ?? 3000,
        what,
      );
      return list.items.map(parsePod);
    } catch (err) {
      throw new Error(`${what}: ${errorText(err)}`, { cause: err });
    }
  }

  async #get(namespace: string, name: string): Promise<PodMetadata | undefined> {
    this.counts.get++;
    this.#client ??= await loadKubeClient(this.#o.api);
    const client = this.#client;
    const what = `GET pod ${namespace}/${name} from ${this.#o.api.baseUrl}`;
    try {
      const pod = await withTimeout(
        client.core.readNamespacedPod({ name, namespace }),
        this.#o.timeoutMs ?? 3000,
        what,
      );
      return parsePod(pod);
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw new Error(`${what}: ${errorText(err)}`, { cause: err });
    }
  }
}
