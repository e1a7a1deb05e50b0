// The form body of an AWS Query API request (EC2, STS): parameters written with their wire names,
// lists and structures flattened the way EC2 reads them — a list `PrivateIpAddress: [a, b]`
// becomes `PrivateIpAddress.1=a&PrivateIpAddress.2=b`, a list of structures
// `Filter: [{ Name, Value: [v] }]` becomes `Filter.1.Name=…&Filter.1.Value.1=v`, a structure
// `Attachment: { AttachmentId }` becomes `Attachment.AttachmentId=…`. Lists count from 1.

export type QueryScalar = string | number | boolean;
export type QueryValue = QueryScalar | readonly QueryValue[] | QueryStruct;
export interface QueryStruct {
  readonly [name: string]: QueryValue | undefined;
}

/** Flattens `params` into name/value pairs in a stable order; undefined members are left out. */
export function flattenQuery(params: QueryStruct): [string, string][] {
  const pairs: [string, string][] = [];
  const visit = (prefix: string, value: QueryValue | undefined) => {
    if (value === undefined) return;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      if (typeof value === 'number' && !Number.isFinite(value)) {
        throw new RangeError(`query parameter ${prefix} is not a finite number (${value})`);
      }
      pairs.push([prefix, String(value)]);
    } else if (isList(value)) {
      for (const [i, member] of value.entries()) visit(`${prefix}.${i + 1}`, member);
    } else {
      for (const [name, member] of Object.entries(value))
        visit(prefix === '' ? name : `${prefix}.${name}`, member);
    }
  };
  visit('', params);
  return pairs;
}

function isList(value: QueryValue): value is readonly QueryValue[] {
  return Array.isArray(value);
}

/**
 * RFC 3986 percent-encoding, as SigV4 and AWS's form parsers expect: everything but the
 * unreserved characters (A-Z a-z 0-9 - _ . ~) is %XX of its UTF-8 bytes, spaces included.
 */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/** The application/x-www-form-urlencoded body: `Action`, `Version`, then the flattened parameters. */
export function queryFormBody(action: string, version: string, params: QueryStruct): string {
  return flattenQuery({ Action: action, Version: version, ...params })
    .map(([name, value]) => `${uriEncode(name)}=${uriEncode(value)}`)
    .join('&');
}
