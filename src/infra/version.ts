// vpcnet's version, as support bundles and the agent's awscni_build_info report it
// (version.test.ts holds it to package.json's).
export const VPCNET_VERSION = '0.1.0';
