// List and watch of one kind, as the API server answers them and as @kubernetes/client-node's
// informer (ListWatch) uses them: a list carries the cluster's resourceVersion; a watch
// (`watch=true`) from that resourceVersion streams newline-delimited events, answers a
// resourceVersion older than the event log with an ERROR event holding a 410 Expired Status,
// ends cleanly after `timeoutSeconds`, and with `allowWatchBookmarks=true` sends BOOKMARK events
// (an object with only metadata.resourceVersion) while quiet, so a client's idle timeout (30 s in
// client-node 1.x) does not cut a healthy watch and its resume point stays recent.
import type { ServerResponse } from 'node:http';
import type { ObjectStore, WatchEvent } from './object-store.ts';
import { KubeError } from './object-store.ts';
import { isJsonObject, type JsonObject, parseFieldSelector, parseLabelSelector, status } from './objects.ts';

export interface WatchOptions {
  /** How often a quiet watch that allows bookmarks gets one. */
  readonly bookmarkIntervalMs: number;
}

type StreamEvent = { readonly type: string; readonly object: JsonObject };

export class ListWatch {
  readonly #options: WatchOptions;
  readonly #open = new Set<ServerResponse>();

  constructor(options: WatchOptions) {
    this.#options = options;
  }

  /** End every open watch (emulator shutdown). */
  closeAll(): void {
    for (const res of this.#open) res.end();
    this.#open.clear();
  }

  /** A list reply, or undefined when the request was a watch and is now streaming. */
  serve(
    res: ServerResponse,
    url: URL,
    store: ObjectStore,
    namespace: string | undefined,
  ): readonly [number, JsonObject] | undefined {
    const q = url.searchParams;
    const byField = parseFieldSelector(q.get('fieldSelector'));
    const byLabel = parseLabelSelector(q.get('labelSelector'));
    const matches = (o: JsonObject) =>
      byField(o) &&
      byLabel(o) &&
      (namespace === undefined || (isJsonObject(o.metadata) && o.metadata.namespace === namespace));
    if (q.get('watch') !== 'true' && q.get('watch') !== '1') {
      // Every resourceVersion a list may ask for ("", "0", a past one) is served from the current
      // state, which the API server may do too (it never answers older than asked).
      const body: JsonObject = {
        kind: store.kind.listKind,
        apiVersion: store.kind.apiVersion ?? 'v1',
        metadata: { resourceVersion: String(store.resourceVersion) },
        items: store.list().filter(matches),
      };
      return [200, body];
    }
    this.#watch(res, q, store, matches);
    return undefined;
  }

  #watch(
    res: ServerResponse,
    q: URLSearchParams,
    store: ObjectStore,
    matches: (o: JsonObject) => boolean,
  ): void {
    const rvText = q.get('resourceVersion');
    const from = rvText === null || rvText === '' || rvText === '0' ? undefined : Number(rvText);
    if (from !== undefined && !Number.isInteger(from)) {
      throw new KubeError(400, 'BadRequest', `invalid resourceVersion: ${rvText}`);
    }
    const timeoutText = q.get('timeoutSeconds');
    const timeoutSeconds = timeoutText === null ? 0 : Number(timeoutText);
    if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) {
      throw new KubeError(400, 'BadRequest', `invalid timeoutSeconds: ${timeoutText}`);
    }
    const backlog: StreamEvent[] = [];
    if (from === undefined) {
      // No resourceVersion: the current state as synthetic ADDED events, then changes.
      backlog.push(
        ...store
          .list()
          .filter(matches)
          .map((object) => ({ type: 'ADDED', object })),
      );
    } else {
      const events = store.eventsSince(from);
      if (events === undefined) {
        backlog.push({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from}`) });
      } else {
        backlog.push(...events.filter((e) => matches(e.object)));
      }
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // Send the headers now: a client waits for them before it reads events.
    res.flushHeaders();
    const write = (e: StreamEvent) => res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    for (const e of backlog) write(e);
    if (backlog.some((e) => e.type === 'ERROR')) {
      res.end();
      return;
    }
    const unsubscribe = store.subscribe((e: WatchEvent) => {
      if (matches(e.object)) write(e);
    });
    this.#open.add(res);
    const timers: NodeJS.Timeout[] = [];
    if (timeoutSeconds > 0) timers.push(setTimeout(() => res.end(), timeoutSeconds * 1000));
    if (q.get('allowWatchBookmarks') === 'true') {
      const bookmark = () =>
        write({
          type: 'BOOKMARK',
          object: {
            kind: store.kind.kind,
            apiVersion: store.kind.apiVersion ?? 'v1',
            metadata: { resourceVersion: String(store.resourceVersion) },
          },
        });
      timers.push(setInterval(bookmark, this.#options.bookmarkIntervalMs));
    }
    const stop = () => {
      unsubscribe();
      for (const t of timers) clearTimeout(t);
      this.#open.delete(res);
    };
    // The response's close, not the request's: a request emits 'close' once its body was read.
    res.on('close', stop);
  }
}
