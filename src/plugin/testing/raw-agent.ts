// Test fixture: a misbehaving agent on a temp unix socket. Unlike fake-agent.ts (a real HTTP
// server), it writes whatever bytes a test scripts, when and as slowly as it is told: garbage, a
// huge body, half an answer, one byte at a time, or nothing at all.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type RawAgentBehaviour =
  /** Once the whole request is in: write `data`, then close the connection or keep it open. */
  | { readonly kind: 'answer'; readonly data: Buffer; readonly after: 'close' | 'hold' }
  /** Read the request, never answer. */
  | { readonly kind: 'silent' }
  /** Accept, never read: a request larger than the socket buffers cannot be written. */
  | { readonly kind: 'unread' }
  /** Once the request is in: write `data` one byte every `everyMs`, never closing. */
  | { readonly kind: 'trickle'; readonly data: Buffer; readonly everyMs: number };

export interface RawAgent {
  readonly socketPath: string;
  /** The requests read so far, raw (head and body). */
  readonly requests: Buffer[];
  close(): Promise<void>;
}

/** Whether `data` holds a whole HTTP request: a head and as many body bytes as it announces. */
function requestComplete(data: Buffer): boolean {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(data.subarray(0, headEnd).toString('latin1'))?.[1];
  return data.length - (headEnd + 4) >= Number(length ?? 0);
}

export async function startRawAgent(behaviour: RawAgentBehaviour): Promise<RawAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'vpcnet-raw-agent-'));
  const socketPath = join(dir, 'agent.sock');
  const requests: Buffer[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const serve = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // the plugin may give up and close first
    if (behaviour.kind === 'unread') {
      socket.pause();
      return;
    }
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk]);
      if (!requestComplete(received)) return;
      socket.off('data', onData);
      socket.resume(); // keep reading (and dropping) whatever else comes
      requests.push(received);
      respond(socket);
    };
    socket.on('data', onData);
  };

  const respond = (socket: Socket): void => {
    switch (behaviour.kind) {
      case 'answer':
        socket.write(behaviour.data);
        if (behaviour.after === 'close') socket.end();
        return;
      case 'trickle': {
        let at = 0;
        const timer = setInterval(() => {
          if (socket.destroyed || at >= behaviour.data.length) {
            clearInterval(timer);
            timers.delete(timer);
            return;
          }
          socket.write(behaviour.data.subarray(at, at + 1));
          at++;
        }, behaviour.everyMs);
        timers.add(timer);
        return;
      }
      case 'silent':
      case 'unread':
        return;
    }
  };

  const server: Server = createServer(serve);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    requests,
    close: async () => {
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An HTTP/1.1 answer with this status and body, framed by content-length. */
export function httpAnswer(status: number, body: string | Buffer): Buffer {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  return Buffer.concat([
    Buffer.from(
      `HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${payload.length}\r\n\r\n`,
    ),
    payload,
  ]);
}
