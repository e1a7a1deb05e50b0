// vpcnetctl's version, as support bundles report it (version.test.ts holds it to package.json's).
export const VPCNET_VERSION = '0.1.0';
