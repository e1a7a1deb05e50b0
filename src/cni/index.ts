// The CNI protocol as the agent uses it: parse a request, shape a result or an error.
// (The plugin imports wire.ts and errors.ts directly, to load as little as possible.)
export { type PodIdentity, parseCniArgs, podIdentityFrom } from './cni-args.ts';
export * from './errors.ts';
export { ifNameProblem, isValidContainerId, isValidNetworkName } from './identifiers.ts';
export type { JsonObject } from './json-fields.ts';
export { type NetConf, type PodSgEnforcingMode, parseNetConf } from './netconf.ts';
export { parsePrevResult } from './prev-result.ts';
export * from './request.ts';
export * from './result.ts';
export { compareVersions, errorVersionFor, isPre100, isSupportedVersion } from './versions.ts';
export * from './wire.ts';
