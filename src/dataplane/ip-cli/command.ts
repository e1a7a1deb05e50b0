// How the dataplane runs kernel tools: argv and stdin in, exit code and both streams out (the
// process runner of src/infra), injected so tests can wrap or fake it.
import { type ProcessResult, runProcess } from '../../infra/process.ts';

export type CommandResult = ProcessResult;

export type CommandRunner = (argv: readonly string[], stdin?: string) => Promise<CommandResult>;

/** The real runner: no shell; a program that cannot be started is code 127 with the reason. */
export const spawnRunner: CommandRunner = (argv, stdin) => runProcess(argv, { stdin });
