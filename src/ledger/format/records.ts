// Fields that several ledger records share: a pod's identity, an attachment key, a resource.
import type { AttachmentKey, PodIdentity } from '../../plan/attachment.ts';
import { parseResourceFields } from '../../plan/kinds.ts';
import type { Resource } from '../../plan/resource.ts';
import { describe, fieldReader, LedgerFormatError, nonEmpty, obj, optStr, str } from './json-fields.ts';

export function parsePod(v: unknown, at: string): PodIdentity {
  const o = obj(v, at);
  const namespace = optStr(o, 'namespace', at);
  const name = optStr(o, 'name', at);
  const uid = optStr(o, 'uid', at);
  return {
    ...(namespace === undefined ? {} : { namespace }),
    ...(name === undefined ? {} : { name }),
    ...(uid === undefined ? {} : { uid }),
  };
}

export function parseResource(v: unknown, at: string): Resource {
  const o = obj(v, at);
  const kind = str(o, 'kind', at);
  const resource = parseResourceFields(kind, fieldReader(o, at));
  if (resource === undefined)
    throw new LedgerFormatError(`${at}.kind`, `unknown resource kind ${describe(kind)}`);
  return resource;
}

export function parseAttachmentKey(v: unknown, at: string): AttachmentKey {
  const k = obj(v, at);
  return {
    network: nonEmpty(k, 'network', at),
    containerId: nonEmpty(k, 'containerId', at),
    ifName: nonEmpty(k, 'ifName', at),
  };
}
