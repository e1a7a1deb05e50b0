// A Kubernetes API call that the server answered with an error: its HTTP status (404 = not found,
// 410 = the resourceVersion expired) and the reason and message of the Status object it sent.
// Calls that got no answer at all (refused, timed out) fail with a plain Error instead.

export class KubeApiError extends Error {
  override name = 'KubeApiError';

  constructor(
    /** The HTTP status, or the code of a watch's ERROR event. */
    readonly status: number,
    /** The Status object's reason (`NotFound`, `Expired`), or the HTTP status text. */
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** The HTTP status of a failed API call, if the server answered (404 = not found). */
export function apiStatus(err: unknown): number | undefined {
  return err instanceof KubeApiError ? err.status : undefined;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** Reason and message of a `kind: Status` body; a body that is not one gives what it can. */
export function parseStatus(body: unknown): { code?: number; reason?: string; message?: string } {
  const s = obj(body);
  const { code, reason, message } = s ?? {};
  return {
    ...(typeof code === 'number' ? { code } : {}),
    ...(typeof reason === 'string' && reason !== '' ? { reason } : {}),
    ...(typeof message === 'string' && message !== '' ? { message } : {}),
  };
}

/** The error for an HTTP answer outside 2xx; `what` names the call (`GET /api/v1/nodes/n1`). */
export function apiErrorOf(what: string, httpStatus: number, statusText: string, body: string): KubeApiError {
  let parsed: ReturnType<typeof parseStatus> = {};
  try {
    parsed = parseStatus(JSON.parse(body));
  } catch {
    // Not JSON (a proxy's HTML page, an empty body): the status line is all there is.
  }
  const reason = parsed.reason ?? statusText;
  const detail = parsed.message ?? body.trim().slice(0, 200);
  return new KubeApiError(
    httpStatus,
    reason,
    `${what}: ${httpStatus} ${reason}${detail === '' ? '' : `: ${detail}`}`,
  );
}
