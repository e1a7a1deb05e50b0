// The spec's rules for names a runtime hands us. Same rules as libcni's Validate* functions,
// so anything containerd or cnitool accepts we accept too, and nothing else.

// Network names and container IDs share one grammar.
const ID_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/** IFNAMSIZ (16) minus the terminating NUL. */
const MAX_IFNAME_LENGTH = 15;

export function isValidContainerId(id: string): boolean {
  return ID_PATTERN.test(id);
}

export function isValidNetworkName(name: string): boolean {
  return ID_PATTERN.test(name);
}

/** Why `name` cannot be a Linux interface name, or undefined when it can. */
export function ifNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.length > MAX_IFNAME_LENGTH) return `is longer than ${MAX_IFNAME_LENGTH} characters`;
  if (name === '.' || name === '..') return `may not be "${name}"`;
  if (/[/:\s]/.test(name)) return "may not contain '/', ':' or whitespace";
  return undefined;
}

/**
 * The network name of the conflist `vpcnetctl install` writes: the name a runtime's requests carry
 * (the first part of an attachment's key), and the one under which the agent records pods it
 * adopts from aws-node, whose DELs the runtime then sends with it.
 */
export const VPCNET_NETWORK_NAME = 'vpcnet';
