// The vpcnet CNI plugin: a forwarder. It hands the raw request to the agent and prints the
// answer; parsing, validation and results live in the agent (src/cni). It decides only
// what to do when the agent cannot answer, and it answers VERSION itself.
import { readFileSync } from 'node:fs';
import {
  CNI_ERR_DECODE,
  CNI_ERR_INTERNAL,
  CNI_ERR_INVALID_NETCONF,
  CNI_ERR_IO,
  CNI_ERR_PLUGIN_NOT_AVAILABLE,
  CNI_ERR_TRY_AGAIN_LATER,
  CniError,
} from '../cni/errors.ts';
import {
  DEFAULT_AGENT_SOCKET,
  DEFAULT_CNI_VERSION,
  type ForwardedRequest,
  MAX_REQUEST_BYTES,
  PLUGIN_VERSION,
  requestTooLargeMessage,
  SUPPORTED_CNI_VERSIONS,
  versionResult,
} from '../cni/wire.ts';
import { DEFAULT_DEL_SPOOL_DIR } from '../spool/format.ts';
import { type DelSpooler, spoolDel } from '../spool/write.ts';
import {
  AgentRefusedTooLargeError,
  type AgentTransport,
  AgentUnreachableError,
  httpTransport,
  socketPathProblem,
} from './forward.ts';

export interface PluginDeps {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdin: string;
  readonly writeStdout: (text: string) => void;
  readonly transport: AgentTransport;
  readonly spool: DelSpooler;
}

/** Runs one CNI invocation and returns the process exit status. Never throws. */
export async function runPlugin(deps: PluginDeps): Promise<number> {
  const command = deps.env.CNI_COMMAND;
  // A request holds stdin whole: a larger stdin cannot fit (bin/vpcnet does not even read it all,
  // nor look into it).
  const stdinTooLarge = Buffer.byteLength(deps.stdin) > MAX_REQUEST_BYTES;
  const parsed = stdinTooLarge ? undefined : looseConfig(deps.stdin);
  const conf = parsed ?? {};
  if (command === 'VERSION') {
    deps.writeStdout(JSON.stringify(versionResult(conf.cniVersion)));
    return 0;
  }

  const socketPath = conf.agentSocket ?? DEFAULT_AGENT_SOCKET;
  const request: ForwardedRequest = { env: cniEnv(deps.env), stdin: deps.stdin };
  const fail = (err: CniError): number => {
    deps.writeStdout(JSON.stringify(err.toJson(conf.cniVersion ?? DEFAULT_CNI_VERSION)));
    return 1;
  };

  // One limit with the agent, checked before connecting: an oversized request is a config error
  // (the configuration is what grows: prevResult, runtimeConfig), never "try again later", and an
  // oversized DEL is never spooled.
  if (stdinTooLarge) {
    return fail(
      new CniError(
        CNI_ERR_INVALID_NETCONF,
        requestTooLargeMessage(),
        'the network configuration on stdin alone is larger than that',
      ),
    );
  }
  // Without a readable config the plugin cannot know which agent to ask: the request is
  // undecodable whoever would answer it.
  if (parsed === undefined) {
    return fail(new CniError(CNI_ERR_DECODE, 'network configuration on stdin is not a JSON object'));
  }

  // A socket path no socket can have would reach some other socket or none: a config error.
  const socketProblem = socketPathProblem(socketPath);
  if (socketProblem !== undefined) {
    return fail(new CniError(CNI_ERR_INVALID_NETCONF, `config.agentSocket ${socketProblem}`, socketPath));
  }

  const bodyBytes = Buffer.byteLength(JSON.stringify(request));
  if (bodyBytes > MAX_REQUEST_BYTES) {
    return fail(
      new CniError(
        CNI_ERR_INVALID_NETCONF,
        requestTooLargeMessage(),
        `${bodyBytes} bytes of network configuration and CNI_* environment`,
      ),
    );
  }

  try {
    const response = await deps.transport(socketPath, request);
    deps.writeStdout(response.stdout);
    return response.exitCode;
  } catch (err) {
    if (err instanceof AgentRefusedTooLargeError) {
      return fail(new CniError(CNI_ERR_INVALID_NETCONF, requestTooLargeMessage(), err.message));
    }
    if (!(err instanceof AgentUnreachableError)) {
      return fail(new CniError(CNI_ERR_INTERNAL, 'vpcnet agent request failed', (err as Error).message));
    }
    const why = `vpcnet agent not reachable at ${socketPath}: ${err.reason}`;
    if (command === 'DEL') {
      // The agent applies spooled DELs before serving, so the runtime may forget this pod now.
      const dir = conf.delSpoolDir ?? DEFAULT_DEL_SPOOL_DIR;
      // A path with a NUL names no file (system calls stop at the NUL): a config error.
      if (dir.includes('\0')) {
        return fail(new CniError(CNI_ERR_INVALID_NETCONF, 'config.delSpoolDir contains a NUL byte', why));
      }
      try {
        deps.spool(dir, request);
        return 0;
      } catch (spoolErr) {
        return fail(new CniError(CNI_ERR_IO, `cannot spool DEL in ${dir}`, `${describe(spoolErr)}; ${why}`));
      }
    }
    if (command === 'STATUS') return fail(new CniError(CNI_ERR_PLUGIN_NOT_AVAILABLE, why));
    return fail(new CniError(CNI_ERR_TRY_AGAIN_LATER, `${why}; try again later`));
  }
}

/** Entry point of bin/vpcnet. */
/** What `vpcnet --help` prints (PLUGIN_USAGE in native/wire.h, byte for byte). */
export const PLUGIN_USAGE = `Usage: vpcnet [--version | --help]

The vpcnet CNI plugin. A container runtime runs it with no arguments: the request is the
CNI_* environment and the network configuration on stdin, and it forwards both to the
vpcnet agent. Try it on a lab: vpcnetctl lab cni ADD --name L --pod NAMESPACE/NAME
`;

/**
 * A runtime passes no arguments (the request is the environment and stdin). A person at a
 * terminal may: --version and --help answer, anything else is refused (exit 2), all before stdin
 * is read, which would wait on the terminal. Returns undefined when there are no arguments.
 */
export function commandLine(
  args: readonly string[],
  out: (s: string) => void,
  err: (s: string) => void,
): number | undefined {
  if (args.length === 0) return undefined;
  if (args.length === 1 && args[0] === '--version') {
    out(`vpcnet CNI plugin ${PLUGIN_VERSION} (CNI spec ${SUPPORTED_CNI_VERSIONS.join(', ')})\n`);
    return 0;
  }
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    out(PLUGIN_USAGE);
    return 0;
  }
  err(
    `vpcnet: unknown argument '${args[0]}': a runtime runs this plugin with no arguments (see vpcnet --help)\n`,
  );
  return 2;
}

export async function main(): Promise<void> {
  const answered = commandLine(
    process.argv.slice(2),
    (s) => process.stdout.write(s),
    (s) => process.stderr.write(s),
  );
  if (answered !== undefined) {
    process.exitCode = answered;
    return;
  }
  process.exitCode = await runPlugin({
    env: process.env,
    stdin: await readStdin(),
    writeStdout: (text) => process.stdout.write(text),
    transport: httpTransport(),
    spool: spoolDel,
  });
}

interface LooseConfig {
  readonly cniVersion?: string;
  readonly agentSocket?: string;
  readonly delSpoolDir?: string;
}

/** Just the keys the plugin itself needs; anything malformed is left for the agent to report. */
function looseConfig(stdin: string): LooseConfig | undefined {
  let value: unknown;
  try {
    value = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const out: { cniVersion?: string; agentSocket?: string; delSpoolDir?: string } = {};
  if (typeof v.cniVersion === 'string' && v.cniVersion !== '') out.cniVersion = v.cniVersion;
  if (typeof v.agentSocket === 'string' && v.agentSocket !== '') out.agentSocket = v.agentSocket;
  if (typeof v.delSpoolDir === 'string' && v.delSpoolDir !== '') out.delSpoolDir = v.delSpoolDir;
  return out;
}

/** Only CNI_* variables cross to the agent; the rest of the runtime's environment is none of its business. */
function cniEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('CNI_') && v !== undefined) out[k] = v;
  }
  return out;
}

function describe(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code !== undefined ? `${e.code}: ${e.message}` : String(e.message ?? err);
}

async function readStdin(): Promise<string> {
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    // A non-blocking pipe refuses a synchronous read; fall back to the stream.
    if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return readStdinStream();
    // No stdin at all: the agent will report the empty config.
    return '';
  }
}

async function readStdinStream(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
