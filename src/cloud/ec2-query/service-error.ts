// An error answer of an AWS Query API: EC2's `<Response><Errors><Error><Code>…` document or
// STS's `<ErrorResponse><Error><Code>…`, read into one typed error with the HTTP status.
import { parseXml, type XmlElement, XmlShapeError } from './xml-reader.ts';

export class AwsServiceError extends Error {
  constructor(
    /** The service's error code, e.g. "InvalidNetworkInterfaceID.NotFound", "RequestLimitExceeded". */
    readonly code: string,
    message: string,
    readonly status: number,
    readonly requestId: string | undefined,
  ) {
    super(message);
    this.name = 'AwsServiceError';
  }
}

/**
 * The error an answer with a status other than 200 stands for. A body that is no AWS error
 * document (a proxy's HTML page, a cut-off reply) still gives an error, named by its status.
 */
export function readServiceError(status: number, body: string): AwsServiceError {
  let root: XmlElement | undefined;
  try {
    root = parseXml(body);
  } catch (err) {
    if (!(err instanceof XmlShapeError)) throw err;
  }
  // EC2: Response > Errors > Error; STS: ErrorResponse > Error.
  const error = root?.child('Errors')?.child('Error') ?? root?.child('Error');
  const code = error?.string('Code')?.trim();
  if (error === undefined || code === undefined || code === '') {
    const excerpt = body.replace(/\s+/g, ' ').trim().slice(0, 200);
    return new AwsServiceError(
      `Http${status}`,
      `HTTP ${status} without an AWS error document${excerpt === '' ? '' : `: ${excerpt}`}`,
      status,
      undefined,
    );
  }
  const requestId = root?.string('RequestID') ?? root?.string('RequestId') ?? root?.string('requestId');
  return new AwsServiceError(code, error.string('Message') ?? '', status, requestId);
}
