import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { CloudError } from './cloud.ts';
import { ImdsClient, type ImdsClientOptions, ImdsError, imdsEndpointFromEnv } from './imds.ts';
import { readInstanceMetadata, readVpcCidrs } from './instance-metadata.ts';

/** IMDSv2 token semantics only: PUT issues a token with a TTL, GET needs a live one or gets 401. */
class FakeImds {
  clockMs = 1_000_000;
  readonly paths = new Map<string, string>();
  /** Answer the next N GETs with this status before serving normally. */
  failNextGets: { status: number; count: number } | undefined;
  hangGets = false;
  puts: { ttl: string | undefined }[] = [];
  gets: { path: string; status: number }[] = [];
  private readonly tokens = new Map<string, number>();
  private nextToken = 1;
  private server: http.Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  reset(): void {
    this.paths.clear();
    this.failNextGets = undefined;
    this.hangGets = false;
    this.puts = [];
    this.gets = [];
    this.tokens.clear();
  }

  revokeAllTokens(): void {
    this.tokens.clear();
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = req.url ?? '';
    if (req.method === 'PUT' && path === '/latest/api/token') {
      const ttl = req.headers['x-aws-ec2-metadata-token-ttl-seconds'];
      const ttlText = Array.isArray(ttl) ? ttl[0] : ttl;
      this.puts.push({ ttl: ttlText });
      const seconds = Number(ttlText);
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > 21600) {
        this.reply(res, 400);
        return;
      }
      const token = `token-${this.nextToken++}`;
      this.tokens.set(token, this.clockMs + seconds * 1000);
      this.reply(res, 200, token);
      return;
    }
    if (req.method !== 'GET' || !path.startsWith('/latest/meta-data/')) {
      this.reply(res, 404);
      return;
    }
    if (this.hangGets) return; // never answers
    const token = req.headers['x-aws-ec2-metadata-token'];
    const expiresAt = typeof token === 'string' ? this.tokens.get(token) : undefined;
    let status: number;
    let body = '';
    if (expiresAt === undefined || expiresAt <= this.clockMs) status = 401;
    else if (this.failNextGets !== undefined && this.failNextGets.count > 0) {
      this.failNextGets.count--;
      status = this.failNextGets.status;
    } else {
      const value = this.paths.get(path.slice('/latest/meta-data/'.length));
      status = value === undefined ? 404 : 200;
      body = value ?? '';
    }
    this.gets.push({ path, status });
    this.reply(res, status, body);
  }

  private reply(res: http.ServerResponse, status: number, body = ''): void {
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(body);
  }
}

describe('ImdsClient', () => {
  const imds = new FakeImds();
  const sleeps: number[] = [];
  const client = (options: ImdsClientOptions = {}) =>
    new ImdsClient({
      endpoint: imds.url,
      now: () => imds.clockMs,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      ...options,
    });

  before(() => imds.start());
  after(() => imds.stop());
  beforeEach(() => {
    imds.reset();
    sleeps.length = 0;
  });

  test('asks for a 21600 s token once and reuses it for later GETs', async () => {
    imds.paths.set('instance-id', 'i-0abc');
    imds.paths.set('mac', '02:00:00:00:00:01');
    const c = client();
    assert.equal(await c.get('instance-id'), 'i-0abc');
    assert.equal(await c.get('/mac'), '02:00:00:00:00:01');
    assert.deepEqual(imds.puts, [{ ttl: '21600' }]);
    assert.deepEqual(
      imds.gets.map((g) => g.status),
      [200, 200],
    );
  });

  test('concurrent first GETs share one token request', async () => {
    imds.paths.set('instance-id', 'i-0abc');
    const c = client();
    const values = await Promise.all([c.get('instance-id'), c.get('instance-id'), c.get('instance-id')]);
    assert.deepEqual(values, ['i-0abc', 'i-0abc', 'i-0abc']);
    assert.equal(imds.puts.length, 1);
  });

  test('renews the token shortly before its TTL ends, so no GET is refused', async () => {
    imds.paths.set('instance-id', 'i-0abc');
    const c = client({ tokenTtlSeconds: 600 });
    await c.get('instance-id');
    imds.clockMs += 500_000; // 100 s of TTL left: still used
    await c.get('instance-id');
    assert.equal(imds.puts.length, 1);
    imds.clockMs += 50_000; // 50 s left: inside the renewal margin (60 s for a 600 s TTL)
    await c.get('instance-id');
    assert.deepEqual(imds.puts, [{ ttl: '600' }, { ttl: '600' }]);
    assert.ok(
      imds.gets.every((g) => g.status === 200),
      JSON.stringify(imds.gets),
    );
  });

  test('a 401 (token revoked early) fetches a new token once and repeats the GET', async () => {
    imds.paths.set('instance-id', 'i-0abc');
    const c = client();
    await c.get('instance-id');
    imds.revokeAllTokens();
    assert.equal(await c.get('instance-id'), 'i-0abc');
    assert.equal(imds.puts.length, 2);
    assert.deepEqual(
      imds.gets.map((g) => g.status),
      [200, 401, 200],
    );
    assert.deepEqual(sleeps, [], 'a token refetch is not a retry and does not back off');
  });

  test('a second 401 in a row is an ImdsError, without a third token request', async () => {
    imds.paths.set('instance-id', 'i-0abc');
    imds.failNextGets = { status: 401, count: 10 };
    const c = client();
    await assert.rejects(c.get('instance-id'), (err: unknown) => {
      assert.ok(err instanceof ImdsError);
      assert.equal(err.status, 401);
      assert.equal(err.retryable, false);
      return true;
    });
    assert.equal(imds.puts.length, 2);
    assert.equal(imds.gets.length, 2);
  });

  test('404 is a typed, non-retryable error naming the path and status, tried once', async () => {
    const c = client();
    const err = await c.get('mac').catch((e: unknown) => e);
    assert.ok(err instanceof ImdsError);
    assert.ok(err instanceof CloudError);
    assert.equal(err.message, 'IMDS GET /latest/meta-data/mac failed: 404 Not Found');
    assert.equal(err.code, 'IMDS');
    assert.equal(err.path, '/latest/meta-data/mac');
    assert.equal(err.status, 404);
    assert.equal(err.retryable, false);
    assert.equal(imds.gets.length, 1);
  });

  test('5xx is retried with doubling backoff and the GET then succeeds', async () => {
    imds.paths.set('instance-id', 'i-0abc');
    imds.failNextGets = { status: 503, count: 2 };
    const c = client({ attempts: 3, backoffMs: 50 });
    assert.equal(await c.get('instance-id'), 'i-0abc');
    assert.deepEqual(
      imds.gets.map((g) => g.status),
      [503, 503, 200],
    );
    assert.deepEqual(sleeps, [50, 100]);
  });

  test('5xx on every attempt ends in a retryable ImdsError that counts the attempts', async () => {
    imds.failNextGets = { status: 500, count: 10 };
    const c = client({ attempts: 3 });
    const err = await c.get('instance-id').catch((e: unknown) => e);
    assert.ok(err instanceof ImdsError);
    assert.equal(err.status, 500);
    assert.equal(err.retryable, true);
    assert.match(err.message, /^IMDS GET \/latest\/meta-data\/instance-id failed: 500 Internal Server Error/);
    assert.match(err.message, /after 3 attempts/);
    assert.equal(imds.gets.length, 3);
  });

  test('a refused connection is retried, then reported with no status', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const c = client({ endpoint: `http://127.0.0.1:${port}`, attempts: 2 });
    const err = await c.get('instance-id').catch((e: unknown) => e);
    assert.ok(err instanceof ImdsError);
    assert.equal(err.status, undefined);
    assert.equal(err.retryable, true);
    assert.equal(err.path, '/latest/api/token');
    assert.match(err.message, /ECONNREFUSED/);
    assert.deepEqual(sleeps, [100]);
  });

  test('a request that gets no answer times out', async () => {
    imds.hangGets = true;
    const c = client({ timeoutMs: 100, attempts: 1 });
    const started = Date.now();
    const err = await c.get('instance-id').catch((e: unknown) => e);
    assert.ok(err instanceof ImdsError);
    assert.match(err.message, /timed out after 100 ms/);
    assert.ok(Date.now() - started < 2000);
  });

  test('getLines splits a list value and drops blank lines', async () => {
    imds.paths.set('network/interfaces/macs/m/vpc-ipv4-cidr-blocks', '10.0.0.0/16\n100.64.0.0/16\n');
    assert.deepEqual(await client().getLines('network/interfaces/macs/m/vpc-ipv4-cidr-blocks'), [
      '10.0.0.0/16',
      '100.64.0.0/16',
    ]);
  });

  test('readInstanceMetadata reads the primary ENI through its MAC', async () => {
    const mac = '02:aa:bb:cc:dd:ee';
    const eni = `network/interfaces/macs/${mac}`;
    for (const [path, value] of [
      ['instance-id', 'i-0abc'],
      ['instance-type', 'm5.large'],
      ['placement/availability-zone', 'us-west-2a'],
      ['placement/region', 'us-west-2'],
      ['mac', mac],
      ['local-ipv4', '10.0.0.10'],
      [`${eni}/subnet-id`, 'subnet-1'],
      [`${eni}/subnet-ipv4-cidr-block`, '10.0.0.0/20'],
      [`${eni}/vpc-id`, 'vpc-0abc'],
      [`${eni}/vpc-ipv4-cidr-blocks`, '10.0.0.0/16\n100.64.0.0/16'],
      [`${eni}/security-group-ids`, 'sg-1\nsg-2'],
    ] as const) {
      imds.paths.set(path, value);
    }
    assert.deepEqual(await readInstanceMetadata(client()), {
      instanceId: 'i-0abc',
      instanceType: 'm5.large',
      region: 'us-west-2',
      availabilityZone: 'us-west-2a',
      primaryMac: mac,
      primaryIp: '10.0.0.10',
      subnetId: 'subnet-1',
      subnetCidr: '10.0.0.0/20',
      vpcId: 'vpc-0abc',
      vpcCidrs: ['10.0.0.0/16', '100.64.0.0/16'],
      securityGroupIds: ['sg-1', 'sg-2'],
    });
  });

  test("readVpcCidrs is one GET of the primary ENI's vpc-ipv4-cidr-blocks, checked as IPv4 CIDRs", async () => {
    const eni = 'network/interfaces/macs/02:aa:bb:cc:dd:ee';
    imds.paths.set(`${eni}/vpc-ipv4-cidr-blocks`, '10.0.0.0/16\n100.64.0.0/16\n');
    const c = client();
    const before = imds.gets.length;
    assert.deepEqual(await readVpcCidrs(c, '02:aa:bb:cc:dd:ee'), ['10.0.0.0/16', '100.64.0.0/16']);
    assert.equal(imds.gets.length - before, 1, 'one GET, not the whole metadata');
    imds.paths.set(`${eni}/vpc-ipv4-cidr-blocks`, '10.0.0.0/16\nnot-a-cidr');
    await assert.rejects(
      readVpcCidrs(c, '02:aa:bb:cc:dd:ee'),
      /vpc-ipv4-cidr-blocks is not a list of IPv4 CIDRs/,
    );
  });

  test('readInstanceMetadata refuses a subnet CIDR or address that is not IPv4, naming the path, without retrying', async () => {
    const mac = '02:aa:bb:cc:dd:ee';
    const eni = `network/interfaces/macs/${mac}`;
    for (const [path, value] of [
      ['instance-id', 'i-0abc'],
      ['instance-type', 'm5.large'],
      ['placement/availability-zone', 'us-west-2a'],
      ['placement/region', 'us-west-2'],
      ['mac', mac],
      ['local-ipv4', '10.0.0.10'],
      [`${eni}/subnet-id`, 'subnet-1'],
      [`${eni}/subnet-ipv4-cidr-block`, '10.0.0.0'],
      [`${eni}/vpc-id`, 'vpc-0abc'],
      [`${eni}/vpc-ipv4-cidr-blocks`, '10.0.0.0/16'],
      [`${eni}/security-group-ids`, 'sg-1'],
    ] as const) {
      imds.paths.set(path, value);
    }
    const err = await readInstanceMetadata(client()).then(
      () => assert.fail('expected an ImdsError'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ImdsError);
    assert.equal(err.message, `IMDS ${eni}/subnet-ipv4-cidr-block is not an IPv4 CIDR: "10.0.0.0"`);
    assert.equal(err.retryable, false);
    imds.paths.set(`${eni}/subnet-ipv4-cidr-block`, '10.0.0.0/20');
    imds.paths.set('local-ipv4', '10.0.0.010');
    await assert.rejects(
      readInstanceMetadata(client()),
      /IMDS local-ipv4 is not an IPv4 address: "10\.0\.0\.010"/,
    );
  });
});

test('the IMDS endpoint comes from AWS_EC2_METADATA_SERVICE_ENDPOINT, else the link-local address', () => {
  assert.equal(
    imdsEndpointFromEnv({ AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:9' }),
    'http://127.0.0.1:9',
  );
  assert.equal(imdsEndpointFromEnv({}), 'http://169.254.169.254');
  assert.equal(imdsEndpointFromEnv({ AWS_EC2_METADATA_SERVICE_ENDPOINT: '' }), 'http://169.254.169.254');
});
