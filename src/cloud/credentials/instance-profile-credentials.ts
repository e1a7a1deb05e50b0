// The instance profile's role credentials from IMDSv2: iam/security-credentials/ names the
// role, iam/security-credentials/<role> holds its current temporary credentials (EC2 rotates
// them well before they expire).
import type { ImdsClient } from '../imds.ts';
import { type CredentialSource, CredentialsError } from './aws-credentials.ts';
import { readCredentialsJson } from './credentials-json.ts';

const ROLE_PATH = 'iam/security-credentials/';

export function instanceProfileCredentialSource(imds: ImdsClient): CredentialSource {
  const name = `instance profile (IMDS ${imds.endpoint.host})`;
  return {
    name,
    async fetch() {
      const doing = `cannot get AWS credentials from the ${name}`;
      const roles = await imds.getLines(ROLE_PATH).catch((err: unknown) => {
        const why = err instanceof Error ? err.message : String(err);
        throw new CredentialsError(`${doing}: ${why} (does the instance have an instance profile?)`, true, {
          cause: err,
        });
      });
      const role = roles[0];
      if (role === undefined) throw new CredentialsError(`${doing}: the instance has no IAM role`, false);
      const document = await imds.get(ROLE_PATH + role).catch((err: unknown) => {
        const why = err instanceof Error ? err.message : String(err);
        throw new CredentialsError(`${doing}: ${why}`, true, { cause: err });
      });
      return readCredentialsJson(document, `IMDS role ${role}`);
    },
  };
}
