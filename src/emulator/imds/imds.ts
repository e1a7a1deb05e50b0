// IMDSv2: a session token from PUT /latest/api/token, then GETs under /latest/meta-data/ that
// answer for the instance the request comes from (by source address, else the fallback).
// Answers reflect the VPC state at the moment of the request.
import type { FaultInjector } from '../faults.ts';
import { type HttpReply, NO_ANSWER, sleep, textReply } from '../http-reply.ts';
import type { StaleReadHistory } from '../stale-reads.ts';
import type { IdSource } from '../vpc/ids.ts';
import type { MetadataOptions } from '../vpc/metadata-options.ts';
import type { Eni, Instance, VpcView } from '../vpc/view.ts';

const MAX_TTL_SECONDS = 21600;

export interface ImdsDeps {
  readonly history: StaleReadHistory;
  readonly faults: FaultInjector;
  readonly ids: IdSource;
  readonly fallbackInstance: (() => string | undefined) | undefined;
  readonly nowMs: () => number;
  /** The instance's metadata options; absent: every instance's endpoint is on. */
  readonly metadataOptions?: (instanceId: string) => MetadataOptions;
}

export interface ImdsRequest {
  readonly method: string;
  readonly path: string;
  readonly sourceAddress: string | undefined;
  readonly header: (name: string) => string | undefined;
}

type Tree = string | ReadonlyMap<string, Tree>;

export class Imds {
  readonly #deps: ImdsDeps;
  /** token -> expiry (ms since epoch) */
  readonly #tokens = new Map<string, number>();

  constructor(deps: ImdsDeps) {
    this.#deps = deps;
  }

  async handle(req: ImdsRequest): Promise<HttpReply> {
    // An instance whose metadata endpoint is turned off gets no answer, not even a token.
    const live = this.#caller(this.#deps.history.view(0), req.sourceAddress);
    if (live !== undefined && this.#deps.metadataOptions?.(live.instanceId).httpEndpoint === 'disabled') {
      return NO_ANSWER;
    }
    const fault = this.#deps.faults.decide(undefined);
    if (fault.latencyMs > 0) await sleep(fault.latencyMs);
    if (fault.error !== undefined) {
      return fault.error.code === 'RequestLimitExceeded'
        ? textReply(429, 'Too Many Requests\n')
        : textReply(500, '');
    }
    if (req.path === '/latest/api/token') return this.#token(req);
    if (!this.#authorized(req.header('x-aws-ec2-metadata-token'))) return textReply(401, '');
    if (req.method !== 'GET' && req.method !== 'HEAD') return textReply(405, '');
    const view = this.#deps.history.view(fault.staleReadMs);
    const instance = this.#caller(view, req.sourceAddress);
    if (instance !== undefined && req.path === '/latest/dynamic/instance-identity/document') {
      return this.#identityDocument(view, instance);
    }
    const prefix = '/latest/meta-data';
    if (instance === undefined || !(req.path === prefix || req.path.startsWith(`${prefix}/`))) {
      return textReply(404, 'Not Found\n');
    }
    const segments = req.path
      .slice(prefix.length)
      .split('/')
      .filter((s) => s !== '');
    let node: Tree = this.#tree(view, instance);
    for (const s of segments) {
      if (typeof node === 'string') return textReply(404, 'Not Found\n');
      const next: Tree | undefined = node.get(s);
      if (next === undefined) return textReply(404, 'Not Found\n');
      node = next;
    }
    if (typeof node === 'string') return textReply(200, node);
    // A directory lists its entries, subdirectories with a trailing slash.
    const listing = [...node].map(([k, v]) => (typeof v === 'string' ? k : `${k}/`));
    return textReply(200, listing.join('\n'));
  }

  #token(req: ImdsRequest): HttpReply {
    if (req.method !== 'PUT') return textReply(405, '');
    const ttlText = req.header('x-aws-ec2-metadata-token-ttl-seconds');
    const ttl = Number(ttlText);
    if (ttlText === undefined || !/^\d+$/.test(ttlText) || ttl < 1 || ttl > MAX_TTL_SECONDS) {
      return textReply(400, '');
    }
    const token = `AQAE${this.#deps.ids.hex(48)}`;
    this.#tokens.set(token, this.#deps.nowMs() + ttl * 1000);
    return {
      status: 200,
      headers: { 'content-type': 'text/plain', 'x-aws-ec2-metadata-token-ttl-seconds': String(ttl) },
      body: token,
    };
  }

  #identityDocument(state: VpcView, instance: Instance): HttpReply {
    const primary = state.enisOf(instance.instanceId).find((e) => e.attachment?.deviceIndex === 0);
    const doc = {
      accountId: '111122223333',
      architecture: 'x86_64',
      availabilityZone: state.subnet(instance.subnetId).spec.availabilityZone,
      imageId: 'ami-0123456789abcdef0',
      instanceId: instance.instanceId,
      instanceType: instance.instanceType,
      pendingTime: instance.launchTime.toISOString().replace(/\.\d+Z$/, 'Z'),
      privateIp: primary?.primaryIp ?? null,
      region: state.spec.region,
      version: '2017-09-30',
    };
    return { status: 200, headers: { 'content-type': 'text/plain' }, body: JSON.stringify(doc, null, 2) };
  }

  #authorized(token: string | undefined): boolean {
    if (token === undefined) return false;
    const expiry = this.#tokens.get(token);
    if (expiry === undefined) return false;
    if (expiry <= this.#deps.nowMs()) {
      this.#tokens.delete(token);
      return false;
    }
    return true;
  }

  #caller(state: VpcView, source: string | undefined): Instance | undefined {
    const address = source?.startsWith('::ffff:') ? source.slice(7) : source;
    const bySource = address === undefined ? undefined : state.instanceByAddress(address);
    if (bySource !== undefined) return bySource;
    const id = this.#deps.fallbackInstance?.();
    return id === undefined ? undefined : state.instances().find((i) => i.instanceId === id);
  }

  #tree(state: VpcView, instance: Instance): Tree {
    const enis = state.enisOf(instance.instanceId);
    const primary = enis.find((e) => e.attachment?.deviceIndex === 0);
    const pool = state.subnet(instance.subnetId);
    const macs = new Map<string, Tree>(enis.map((e) => [e.mac, this.#macTree(state, e)]));
    return new Map<string, Tree>([
      ['ami-id', 'ami-0123456789abcdef0'],
      ['hostname', primary ? hostname(primary.primaryIp, state.spec.region) : ''],
      ['instance-id', instance.instanceId],
      ['instance-type', instance.instanceType],
      ['local-hostname', primary ? hostname(primary.primaryIp, state.spec.region) : ''],
      ['local-ipv4', primary?.primaryIp ?? ''],
      ['mac', primary?.mac ?? ''],
      ['network', new Map([['interfaces', new Map([['macs', macs]])]])],
      [
        'placement',
        new Map([
          ['availability-zone', pool.spec.availabilityZone],
          ['region', state.spec.region],
        ]),
      ],
      ['security-groups', instance.securityGroupIds.join('\n')],
    ]);
  }

  #macTree(state: VpcView, eni: Eni): Tree {
    const pool = state.subnet(eni.subnetId);
    // Prefix and IPv6 paths exist only where there is something to list, as on EC2 (a 404 else).
    const optional: [string, Tree][] = [
      ...(eni.ipv4Prefixes.length > 0
        ? [['ipv4-prefix', eni.ipv4Prefixes.join('\n')] as [string, Tree]]
        : []),
      ...(eni.ipv6Addresses.length > 0 ? [['ipv6s', eni.ipv6Addresses.join('\n')] as [string, Tree]] : []),
      ...(eni.ipv6Prefixes.length > 0
        ? [['ipv6-prefix', eni.ipv6Prefixes.join('\n')] as [string, Tree]]
        : []),
      ...(pool.spec.ipv6Cidr === undefined
        ? []
        : [['subnet-ipv6-cidr-blocks', pool.spec.ipv6Cidr] as [string, Tree]]),
      ...(state.spec.ipv6Cidr === undefined
        ? []
        : [['vpc-ipv6-cidr-blocks', state.spec.ipv6Cidr] as [string, Tree]]),
    ];
    return new Map<string, Tree>([
      ...optional,
      ['device-number', String(eni.attachment?.deviceIndex ?? '')],
      ['interface-id', eni.eniId],
      ['local-hostname', hostname(eni.primaryIp, state.spec.region)],
      ['local-ipv4s', [eni.primaryIp, ...eni.secondaryIps].join('\n')],
      ['mac', eni.mac],
      ['owner-id', '111122223333'],
      ['security-group-ids', eni.securityGroupIds.join('\n')],
      ['subnet-id', eni.subnetId],
      ['subnet-ipv4-cidr-block', pool.spec.cidr],
      ['vpc-id', state.spec.vpcId],
      ['vpc-ipv4-cidr-block', state.spec.cidr],
      ['vpc-ipv4-cidr-blocks', state.vpcCidrs().join('\n')],
    ]);
  }
}

function hostname(ip: string, region: string): string {
  return `ip-${ip.replaceAll('.', '-')}.${region}.compute.internal`;
}
