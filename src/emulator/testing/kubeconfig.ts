// Test support: a kubeconfig that points kubectl at an emulated API (no TLS, a token it ignores),
// for tests that run the installed kubectl against the emulator, in-process or a lab's.

/** The kubeconfig's text: one cluster at `server`, current. */
export function kubeconfigFor(server: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: emulator, cluster: {server: "${server}"}}]`,
    'users: [{name: emulator, user: {token: emulator}}]',
    'contexts: [{name: emulator, context: {cluster: emulator, user: emulator}}]',
    'current-context: emulator',
    '',
  ].join('\n');
}
