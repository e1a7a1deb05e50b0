// A CA and a server certificate for 127.0.0.1 signed by it, made with openssl in a temporary
// directory, for tests of the client's HTTPS: the API server's certificate is trusted only
// through the CA bundle the client is given.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ThrowawayCa {
  readonly dir: string;
  /** Path of the CA certificate (PEM): what a client is given as caFile. */
  readonly caFile: string;
  readonly serverKey: Buffer;
  readonly serverCert: Buffer;
  remove(): Promise<void>;
}

export async function makeThrowawayCa(): Promise<ThrowawayCa> {
  const dir = await mkdtemp(join(tmpdir(), 'vpcnet-test-ca-'));
  const f = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  try {
    const days = ['-days', '1'];
    await run('openssl', [
      'req',
      '-x509',
      ...ec,
      ...days,
      '-subj',
      '/CN=vpcnet test CA',
      '-keyout',
      f('ca.key'),
      '-out',
      f('ca.crt'),
    ]);
    await run('openssl', [
      'req',
      ...ec,
      '-subj',
      '/CN=127.0.0.1',
      '-keyout',
      f('server.key'),
      '-out',
      f('server.csr'),
    ]);
    await writeFile(f('san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      f('server.csr'),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      ...days,
      '-extfile',
      f('san.cnf'),
      '-out',
      f('server.crt'),
    ]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`openssl could not make a test CA: ${err instanceof Error ? err.message : String(err)}`);
  }
  return {
    dir,
    caFile: f('ca.crt'),
    serverKey: await readFile(f('server.key')),
    serverCert: await readFile(f('server.crt')),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
