// How a failed cloud call reads in the pool's logs and errors: the EC2 code first, as operators
// search for it.

import { CloudError } from '../../cloud/cloud.ts';
import { errorText } from '../../infra/error-text.ts';

export function cloudErrorText(err: unknown): string {
  if (err instanceof CloudError) return `${err.code}: ${err.message}`;
  return errorText(err);
}
