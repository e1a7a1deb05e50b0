// The lab's shorthand for the process runner of src/infra: run a program that must succeed and
// read its stdout. A failure is a CommandFailed naming the command line and the program's stderr.
import { runToSuccess } from '../infra/process.ts';

export async function runCommand(file: string, args: readonly string[], stdin?: string): Promise<string> {
  return (await runToSuccess([file, ...args], { stdin })).stdout;
}
