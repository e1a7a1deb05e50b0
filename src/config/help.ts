// `vpcnetd --help`, rendered from the settings table so that it cannot drift from the parser.
import type { DocumentedVariable } from './setting.ts';
import { DOCUMENTED_VARIABLES } from './settings.ts';

const WIDTH = 100;
const INDENT = '      ';

/** Greedy word wrap; a word longer than the width stays whole on its own line. */
function wrap(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = indent;
  for (const word of text.split(/\s+/)) {
    if (line.length > indent.length && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = indent;
    }
    line += line.length > indent.length ? ` ${word}` : word;
  }
  lines.push(line);
  return lines;
}

function entry(variable: DocumentedVariable): string[] {
  const notes = [`default: ${variable.defaultText}`, ...(variable.upstream ? ['upstream name'] : [])];
  // Backticks mark code in the README; on a terminal they are noise.
  return [
    `  ${variable.env} (${notes.join('; ')})`,
    ...wrap(variable.description.replaceAll('`', ''), INDENT),
  ];
}

export function vpcnetdHelp(variables: readonly DocumentedVariable[] = DOCUMENTED_VARIABLES): string {
  const intro =
    "The vpcnet node agent: serves the CNI plugin on a unix socket and keeps the node's pool of VPC " +
    'addresses. It is configured by environment variables only (README, "Configuration"); a blank ' +
    "value counts as unset, and an upstream name (aws-vpc-cni's) has the upstream's meaning.";
  return [
    'Usage: vpcnetd [--help]',
    '',
    ...wrap(intro, ''),
    '',
    'Environment:',
    ...variables.flatMap(entry),
    '',
  ].join('\n');
}
