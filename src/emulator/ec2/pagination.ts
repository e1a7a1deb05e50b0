// MaxResults / NextToken paging of Describe* replies. The token is the offset of the next item,
// opaque to clients; a state change between pages may shift items, as EC2 does not promise either.
// MaxResults is checked against the action's range (EC2's message); without it every item comes
// at once, unless the short-pages fault cuts the page (QueryParams.pageItems).
import { invalidParameter } from './error.ts';
import type { QueryParams } from './params.ts';

export interface Page<T> {
  readonly items: T[];
  readonly nextToken: string | undefined;
}

export function paginate<T>(items: readonly T[], p: QueryParams, min = 5, max = 1000): Page<T> {
  const maxResults = p.int('MaxResults');
  const token = p.get('NextToken');
  let offset = 0;
  if (token !== undefined && token !== '') {
    offset = Number(
      Buffer.from(token, 'base64url')
        .toString('utf8')
        .replace(/^offset:/, ''),
    );
    if (!Number.isInteger(offset) || offset < 0) throw invalidParameter(`Invalid NextToken: ${token}`);
  }
  if (maxResults !== undefined && (maxResults < min || maxResults > max)) {
    throw invalidParameter(
      `Value ( ${maxResults} ) for parameter maxResults is invalid. Expecting a value between ${min} and ${max}.`,
    );
  }
  const size = Math.min(maxResults ?? Number.POSITIVE_INFINITY, p.pageItems ?? Number.POSITIVE_INFINITY);
  if (size === Number.POSITIVE_INFINITY) return { items: items.slice(offset), nextToken: undefined };
  const end = offset + size;
  return {
    items: items.slice(offset, end),
    nextToken: end < items.length ? Buffer.from(`offset:${end}`).toString('base64url') : undefined,
  };
}
