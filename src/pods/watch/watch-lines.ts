// The lines of a watch response as the API server streams it (one JSON event per line), until the
// server ends it or it sent nothing for `idleMs` (a connection that died without a word: the
// stream is destroyed and the lines end as if the server had closed it). Throws when the stream
// breaks otherwise. What a line means is its kind's parser's to say (pod-watch-events.ts).
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export async function* watchLines(stream: Readable, idleMs: number): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let idle = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      stream.destroy();
    }, idleMs);
  };
  arm();
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      arm();
      pending += decoder.write(chunk);
      let nl = pending.indexOf('\n');
      while (nl >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line !== '') yield line;
        nl = pending.indexOf('\n');
      }
    }
  } catch (err) {
    if (!idle) throw err;
  } finally {
    clearTimeout(timer);
    stream.destroy();
  }
  const last = (pending + decoder.end()).trim();
  if (last !== '' && !idle) yield last;
}
