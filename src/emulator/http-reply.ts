// What a request handler answers, independent of the listener it came in on.
export interface HttpReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export function jsonReply(status: number, value: unknown): HttpReply {
  return { status, headers: { 'content-type': 'application/json' }, body: `${JSON.stringify(value)}\n` };
}

export function textReply(status: number, body: string): HttpReply {
  return { status, headers: { 'content-type': 'text/plain' }, body };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
