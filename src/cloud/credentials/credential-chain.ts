// Where the agent's AWS credentials come from, in the order of the AWS SDKs' default chain for
// a node: the environment's keys, IRSA's web identity, container credentials (EKS Pod
// Identity), the instance profile. The first source that is configured is the one used — one
// configured but failing is an error to report, not a reason to fall through to the next.
import { readFile } from 'node:fs/promises';
import type { HttpTransport } from '../ec2-query/http-transport.ts';
import type { ImdsClient } from '../imds.ts';
import type { CredentialSource } from './aws-credentials.ts';
import { containerCredentialSource } from './container-credentials.ts';
import { envCredentialSource } from './env-credentials.ts';
import { instanceProfileCredentialSource } from './instance-profile-credentials.ts';
import { webIdentityCredentialSource } from './web-identity-credentials.ts';

export interface CredentialChainDeps {
  readonly transport: HttpTransport;
  readonly imds: ImdsClient;
  readonly region: string;
  readonly readFile?: (path: string) => Promise<string>;
  readonly now?: () => number;
}

export function credentialSourceFromEnv(env: NodeJS.ProcessEnv, deps: CredentialChainDeps): CredentialSource {
  const files = deps.readFile ?? ((path: string) => readFile(path, 'utf8'));
  const now = deps.now ?? Date.now;
  return (
    envCredentialSource(env) ??
    webIdentityCredentialSource(env, {
      transport: deps.transport,
      readFile: files,
      region: deps.region,
      now,
    }) ??
    containerCredentialSource(env, { transport: deps.transport, readFile: files }) ??
    instanceProfileCredentialSource(deps.imds)
  );
}
