// A watch of pods as the API server streams it: one JSON event per line, `{type, object}`.
// ADDED/MODIFIED/DELETED carry a pod, parsed here at the edge into PodMetadata; BOOKMARK carries
// only the resourceVersion the watch has reached; ERROR carries a Status (410 Expired: the
// resourceVersion is too old, the client must list again).
import type { Readable } from 'node:stream';
import { KubeApiError, parseStatus } from '../kube-api-error.ts';
import { type PodMetadata, parsePod } from '../pod-metadata.ts';
import { watchLines } from './watch-lines.ts';

export type PodWatchEvent =
  | {
      readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
      readonly pod: PodMetadata;
      /** The object's resourceVersion: where a watch resumes after this event. */
      readonly resourceVersion: string | undefined;
    }
  | { readonly type: 'BOOKMARK'; readonly resourceVersion: string | undefined }
  | { readonly type: 'ERROR'; readonly error: KubeApiError };

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function resourceVersionOf(object: Obj | undefined): string | undefined {
  const rv = obj(object?.metadata)?.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

/** One line of the stream. Throws on a line that is not a watch event of a pod. */
export function parsePodWatchEvent(line: string): PodWatchEvent {
  let event: Obj | undefined;
  try {
    event = obj(JSON.parse(line));
  } catch {
    throw new Error(`watch sent a line that is not JSON: ${line.slice(0, 200)}`);
  }
  const type = event?.type;
  const object = obj(event?.object);
  switch (type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
      return { type, pod: parsePod(object), resourceVersion: resourceVersionOf(object) };
    case 'BOOKMARK':
      return { type, resourceVersion: resourceVersionOf(object) };
    case 'ERROR': {
      const s = parseStatus(object);
      const code = s.code ?? 500;
      const reason = s.reason ?? 'Unknown';
      return {
        type,
        error: new KubeApiError(code, reason, `watch ERROR ${code} ${reason}: ${s.message ?? ''}`),
      };
    }
    default:
      throw new Error(`watch sent an event of unknown type ${JSON.stringify(type)}`);
  }
}

/**
 * The events of a watch response, until the server ends it, or until it sent nothing for
 * `idleMs` (a connection that died without a word; the stream is then destroyed and the
 * iteration ends as if the server had closed it). Throws when the stream breaks or a line is bad.
 */
export async function* podWatchEvents(stream: Readable, idleMs: number): AsyncGenerator<PodWatchEvent> {
  for await (const line of watchLines(stream, idleMs)) yield parsePodWatchEvent(line);
}
