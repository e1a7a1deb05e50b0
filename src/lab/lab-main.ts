// Development entry point of the lab commands, for running them from source before bin/vpcnetctl
// is built: `node --import tsx src/lab/lab-main.ts lab up --name L`.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLabCommand } from './cli-lab.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
process.exitCode = await runLabCommand(process.argv.slice(2), repoRoot);
