// Ledger files of schema 1 (before the pod plan) recorded, per attachment, its address, ENI table,
// host veth and MTU as fields, and only the node-side resources. They are read into the pod plan
// of the same attachment: exactly the resources that attachment's ADD created, pod side included.
import type { Attachment, AttachmentKey } from '../../plan/attachment.ts';
import { hostVethMac } from '../../plan/names.ts';
import { POD_GATEWAY } from '../../plan/pod-plan.ts';
import type { Resource } from '../../plan/resource.ts';
import { MAIN_TABLE } from '../../plan/views.ts';
import { arr, int, LedgerFormatError, nonEmpty, type Obj, obj, optStr, str } from './json-fields.ts';

function v1Resource(v: unknown, at: string, ctx: { key: AttachmentKey; mtu: number }): Resource {
  const o = obj(v, at);
  const kind = str(o, 'kind', at);
  switch (kind) {
    case 'address':
      return { kind: 'vpcAddress', ip: nonEmpty(o, 'ip', at), eniId: nonEmpty(o, 'eniId', at) };
    case 'veth':
      return {
        kind: 'veth',
        hostName: nonEmpty(o, 'hostName', at),
        hostMac: hostVethMac(ctx.key),
        podIfName: ctx.key.ifName,
        mtu: ctx.mtu,
      };
    case 'hostRoute':
      return {
        kind: 'route',
        side: 'node',
        dst: nonEmpty(o, 'dst', at),
        dev: nonEmpty(o, 'dev', at),
        table: MAIN_TABLE,
        scopeLink: true,
      };
    case 'rule': {
      const from = optStr(o, 'from', at);
      const to = optStr(o, 'to', at);
      return {
        kind: 'rule',
        priority: int(o, 'priority', at),
        table: int(o, 'table', at),
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
      };
    }
    case 'snat':
      return { kind: 'snat', ip: nonEmpty(o, 'ip', at) };
    default:
      throw new LedgerFormatError(`${at}.kind`, `unknown resource kind ${JSON.stringify(kind)}`);
  }
}

/** The pod-side resources every schema-1 attachment's ADD made inside the pod. */
function v1PodSide(key: AttachmentKey, ip: string): Resource[] {
  const dev = key.ifName;
  return [
    { kind: 'ifAddress', side: 'pod', dev, cidr: `${ip}/32` },
    { kind: 'route', side: 'pod', dst: `${POD_GATEWAY}/32`, dev, table: MAIN_TABLE, scopeLink: true },
    { kind: 'route', side: 'pod', dst: 'default', dev, via: POD_GATEWAY, table: MAIN_TABLE },
    { kind: 'neighbour', side: 'pod', dev, ip: POD_GATEWAY, lladdr: hostVethMac(key) },
  ];
}

/** The resources of a schema-1 attachment record `o`, in plan order. */
export function v1Resources(o: Obj, at: string, key: AttachmentKey): Attachment['resources'] {
  const mtu = int(o, 'mtu', at);
  const ip = nonEmpty(o, 'ip', at);
  const recorded = arr(o.resources, `${at}.resources`).map((r, i) =>
    v1Resource(r, `${at}.resources[${i}]`, { key, mtu }),
  );
  const veth = recorded.findIndex((r) => r.kind === 'veth');
  // Schema 1 kept the address as fields; a record with an address resource has it twice.
  const address: Resource[] = recorded.some((r) => r.kind === 'vpcAddress')
    ? []
    : [{ kind: 'vpcAddress', ip, eniId: nonEmpty(o, 'eniId', at) }];
  if (veth < 0) return [...address, ...recorded];
  return [...address, ...recorded.slice(0, veth + 1), ...v1PodSide(key, ip), ...recorded.slice(veth + 1)];
}
