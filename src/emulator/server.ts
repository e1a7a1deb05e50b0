// startEmulator: one VPC's state served on every TCP listener and the admin socket; requests are
// routed by path — /latest/ to IMDS, /admin/ to the admin API, /api/ to the Kubernetes slice,
// POST / to the EC2 Query API.
import { chmod, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorText } from '../infra/error-text.ts';
import { handleAdmin } from './admin.ts';
import type { EmulatorOptions, RunningEmulator } from './api.ts';
import { ResourceController } from './controller/resource-controller.ts';
import { IamRole } from './ec2/authorization.ts';
import { Ec2CallCounts } from './ec2/call-counts.ts';
import { Ec2CallRates } from './ec2/call-rates.ts';
import { handleEc2 } from './ec2/query-api.ts';
import { EC2_THROTTLING, mergeThrottling, RequestThrottling } from './ec2/request-throttling.ts';
import { FaultInjector, staleWindowMs } from './faults.ts';
import type { HttpReply } from './http-reply.ts';
import { handleIamCall, iamServiceOf } from './iam/iam-api.ts';
import { Imds } from './imds/imds.ts';
import { KubeApi } from './kube/kube-api.ts';
import { registerNodesOfInstances } from './kube/node-objects.ts';
import {
  CNI_NODE,
  CONFIG_MAP,
  DAEMON_SET,
  ENI_CONFIG,
  EVENT,
  LEASE,
  NODE,
  ObjectStore,
  POD,
  ResourceVersionCounter,
} from './kube/object-store.ts';
import { StaleReadHistory } from './stale-reads.ts';
import { IdSource } from './vpc/ids.ts';
import { VpcOperations } from './vpc/operations.ts';
import { VpcState } from './vpc/state.ts';
import { preFragmentSpec } from './vpc/tenants.ts';

const MAX_BODY_BYTES = 4 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) req.destroy(new Error('request body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, r: HttpReply): void {
  if (r.drop === true) {
    res.socket?.destroy();
    return;
  }
  res.writeHead(r.status, { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) });
  res.end(r.body);
}

function listen(server: Server, target: { host: string; port: number } | string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if (typeof target === 'string') server.listen(target, done);
    else server.listen(target.port, target.host, done);
  });
}

function urlOf(server: Server): string {
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return `http://${host}:${a.port}`;
}

export async function startEmulator(opts: EmulatorOptions): Promise<RunningEmulator> {
  const log = opts.log ?? (() => {});
  const random = opts.random ?? Math.random;
  const ids = new IdSource(random);
  const state = new VpcState(opts.vpc, ids);
  preFragmentSpec(state, opts.vpc.subnets);
  const ops = new VpcOperations(state, opts.fabric, log);
  const nowMs = opts.nowMs ?? (() => Date.now());
  const history = new StaleReadHistory(state, nowMs);
  const faults = new FaultInjector(random, (f) => history.reset(staleWindowMs(f)));
  const imds = new Imds({
    history,
    faults,
    ids,
    fallbackInstance: opts.imdsFallbackInstance,
    nowMs,
    metadataOptions: (id) => state.metadataOptions.of(id),
  });
  const versions = new ResourceVersionCounter();
  const pods = new ObjectStore(POD, { ids, versions });
  const nodes = new ObjectStore(NODE, { ids, versions });
  registerNodesOfInstances(ops, nodes);
  const eniConfigs = new ObjectStore(ENI_CONFIG, { ids, versions });
  const cniNodes = new ObjectStore(CNI_NODE, { ids, versions });
  const events = new ObjectStore(EVENT, { ids, versions });
  const leases = new ObjectStore(LEASE, { ids, versions });
  const configMaps = new ObjectStore(CONFIG_MAP, { ids, versions });
  const daemonSets = new ObjectStore(DAEMON_SET, { ids, versions });
  const kube = new KubeApi({
    pods,
    nodes,
    events,
    eniConfigs,
    cniNodes,
    leases,
    configMaps,
    daemonSets,
    log,
    ...(opts.containerRuntime === undefined ? {} : { containerRuntime: opts.containerRuntime }),
  });
  const controller = new ResourceController({ ops, pods, nodes, cniNodes, eniConfigs, log });
  const stopController = controller.start();
  const calls = new Ec2CallCounts();
  const throttling = new RequestThrottling(mergeThrottling(EC2_THROTTLING, opts.throttling ?? {}), nowMs);
  const rates = new Ec2CallRates(nowMs);
  const iam = new IamRole();

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const method = req.method ?? 'GET';
    const body = await readBody(req);
    const path = url.pathname;
    if (path.startsWith('/latest/')) {
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      return reply(res, await imds.handle({ method, path, sourceAddress: req.socket.remoteAddress, header }));
    }
    if (path.startsWith('/admin/'))
      return reply(
        res,
        await handleAdmin(method, path, body, {
          ops,
          faults,
          controller,
          calls,
          eniConfigs,
          iam,
          throttling,
          rates,
        }),
      );
    const kubePath =
      path.startsWith('/api/') || path.startsWith('/apis/') || ['/api', '/apis', '/version'].includes(path);
    if (kubePath) return kube.handle(req, res, url, body);
    if (path === '/' && method === 'POST') {
      const authorization = req.headers.authorization;
      const service = iamServiceOf(new URLSearchParams(body), authorization);
      if (service !== undefined) return reply(res, handleIamCall(service, body, iam, ids, authorization));
      const deps = { ops, history, faults, ids, log, calls, iam, throttling, rates };
      return reply(res, await handleEc2(body, deps, authorization));
    }
    reply(res, { status: 404, headers: { 'content-type': 'text/plain' }, body: 'Not Found\n' });
  }

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    route(req, res).catch((err: unknown) => {
      log({ msg: 'emulator request failed', url: req.url ?? null, error: errorText(err) });
      if (!res.headersSent) reply(res, { status: 500, headers: {}, body: '' });
      else res.end();
    });
  };

  // Only pods/{name}/exec upgrades its connection (a WebSocket); the rest are plain requests.
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => kube.upgrade(req, socket, head);
  const servers: Server[] = [];
  const closeAll = async () => {
    stopController();
    kube.closeWatches();
    kube.closeExecs();
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    if (opts.adminSocket !== undefined) await rm(opts.adminSocket, { force: true });
  };
  try {
    for (const l of opts.listen) {
      const s = createServer(handler);
      s.on('upgrade', upgrade);
      servers.push(s);
      await listen(s, l);
    }
    if (opts.adminSocket !== undefined) {
      // A socket file left by a crashed emulator would make listen fail with EADDRINUSE.
      await rm(opts.adminSocket, { force: true });
      const s = createServer(handler);
      s.on('upgrade', upgrade);
      servers.push(s);
      // The socket is bound synchronously inside listen(), so the umask is narrowed only for that
      // call (other files this process creates meanwhile keep their modes); chmod makes sure.
      const previous = process.umask(0o177);
      let listening: Promise<void>;
      try {
        listening = listen(s, opts.adminSocket);
      } finally {
        process.umask(previous);
      }
      await listening;
      await chmod(opts.adminSocket, 0o600);
    }
  } catch (err) {
    await closeAll();
    throw err;
  }
  const urls = servers.slice(0, opts.listen.length).map(urlOf);

  return {
    urls,
    launchInstance: (req) => ops.launch(req),
    terminateInstance: (instanceId) => ops.terminate(instanceId),
    setFaults: (f) => faults.set(f),
    setThrottling: (change) => throttling.set(mergeThrottling(throttling.settings, change)),
    throttling: () => throttling.state(),
    ec2Rates: (sinceSecond) => rates.since(sinceSecond),
    close: closeAll,
  };
}
