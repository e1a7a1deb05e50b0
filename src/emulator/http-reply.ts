// What a request handler answers, independent of the listener it came in on.
export interface HttpReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** No answer at all: the connection is closed (an endpoint that is turned off). */
  readonly drop?: true;
}

/** The reply of an endpoint that is off: the caller's connection is closed without an answer. */
export const NO_ANSWER: HttpReply = { status: 0, headers: {}, body: '', drop: true };

export function jsonReply(status: number, value: unknown): HttpReply {
  return { status, headers: { 'content-type': 'application/json' }, body: `${JSON.stringify(value)}\n` };
}

export function textReply(status: number, body: string): HttpReply {
  return { status, headers: { 'content-type': 'text/plain' }, body };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
