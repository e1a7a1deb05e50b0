// A hostile CNI request while it is being generated: a valid request for the fuzzed lab node,
// changed by defects (each one a reason the request must fail, with the CNI code that fits) and
// by noise (changes a plugin must shrug off), then rendered as the env and stdin a runtime passes.

export type FuzzCommand = 'ADD' | 'DEL' | 'CHECK' | 'GC' | 'STATUS';

/** The lab node the requests are for. */
export interface FuzzTarget {
  readonly agentSocket: string;
  /** A spool dir of the test's own: a DEL may be spooled only if the agent were unreachable. */
  readonly delSpoolDir: string;
  /** A live attachment the requests aim at: it must survive every one of them. */
  readonly sentinel: { readonly containerId: string; readonly ifName: string; readonly netns: string };
  /** A netns path that does not exist. */
  readonly absentNetns: string;
}

/** Why a request must fail, and how. */
export interface Defect {
  readonly label: string;
  /** The CNI error code that fits it. */
  readonly code: number;
  /** What the error's msg or details must name when this is the only defect. */
  readonly mentions?: RegExp;
}

export interface Draft {
  readonly command: FuzzCommand;
  /** undefined: the variable is not set at all. */
  env: Record<string, string | undefined>;
  config: Record<string, unknown>;
  /** JSON.stringify's indentation (noise). */
  indent: number;
  /** Config members whose value is JSON text as it is (nesting deeper than JSON.stringify goes). */
  readonly rawValues: Map<string, string>;
  /** Turns the rendered config into text that is no longer a JSON object (a defect). */
  corrupt?: (text: string) => string;
  /** Replaces the config outright (a defect). */
  wholeStdin?: string;
  readonly defects: Defect[];
}

export interface Mutation {
  readonly apply: (d: Draft) => void;
}

/** What a case sends, and what it must get back. */
export interface HostileRequest {
  readonly command: FuzzCommand;
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: Buffer;
  readonly defects: readonly Defect[];
  /** The cniVersion the error must carry: the config's when it is a non-empty string, else 1.0.0. */
  readonly errorVersion: string;
}

/** The versions a valid request of `command` may use. */
export function validVersionsFor(command: FuzzCommand): readonly string[] {
  if (command === 'GC' || command === 'STATUS') return ['1.1.0'];
  if (command === 'CHECK') return ['0.4.0', '1.0.0', '1.1.0'];
  return ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];
}

/** A valid request of `command` for the sentinel attachment (or another container). */
export function baseDraft(
  t: FuzzTarget,
  command: FuzzCommand,
  version: string,
  containerId: string | undefined,
): Draft {
  const config: Record<string, unknown> = {
    cniVersion: version,
    name: 'vpcnet',
    type: 'vpcnet',
    agentSocket: t.agentSocket,
    delSpoolDir: t.delSpoolDir,
    'x-pad': 'pad', // a string for corruptions to break
  };
  // A GC that got through would keep the sentinel: the only attachment of the node.
  if (command === 'GC') {
    config['cni.dev/valid-attachments'] = [
      { containerID: t.sentinel.containerId, ifname: t.sentinel.ifName },
    ];
  }
  return {
    command,
    env: {
      CNI_COMMAND: command,
      CNI_CONTAINERID: containerId ?? t.sentinel.containerId,
      CNI_IFNAME: t.sentinel.ifName,
      CNI_NETNS: t.sentinel.netns,
      CNI_PATH: '/opt/cni/bin',
      CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=fuzz',
    },
    config,
    indent: 0,
    rawValues: new Map(),
    defects: [],
  };
}

/** The cniVersion an error about this stdin carries (as the plugin and the agent pick it). */
function errorVersionOf(stdin: Buffer): string {
  try {
    const v: unknown = JSON.parse(stdin.toString('utf8'));
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const version = (v as Record<string, unknown>).cniVersion;
      if (typeof version === 'string' && version !== '') return version;
    }
  } catch {
    // not JSON: the default
  }
  return '1.0.0';
}

/** The config as text, with the raw values spliced in where their placeholders went. */
function configText(d: Draft): string {
  const config = { ...d.config };
  const placeholders = new Map<string, string>();
  for (const [key, raw] of d.rawValues) {
    const placeholder = `@raw-${placeholders.size}@`;
    config[key] = placeholder;
    placeholders.set(JSON.stringify(placeholder), raw);
  }
  let text = JSON.stringify(config, null, d.indent);
  for (const [placeholder, raw] of placeholders) text = text.replace(placeholder, raw);
  return text;
}

export function render(d: Draft): HostileRequest {
  // A whole-stdin replacement wins over a corruption of the rendered config: applied on top of
  // each other, two defects can cancel out (" \n" + a trailing "{}" is the valid JSON " \n{}").
  const text = d.wholeStdin ?? (d.corrupt ? d.corrupt(configText(d)) : configText(d));
  const stdin = Buffer.from(text, 'utf8');
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(d.env)) if (v !== undefined) env[k] = v;
  return { command: d.command, env, stdin, defects: d.defects, errorVersion: errorVersionOf(stdin) };
}
