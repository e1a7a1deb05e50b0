/* Constants the TypeScript side defines too: src/cni/wire.ts (versions, paths, spool names) and
 * src/cni/errors.ts (CNI error codes). native-local.test.ts holds each to its TypeScript value. */
#ifndef VPCNET_WIRE_H
#define VPCNET_WIRE_H

static const char *const SUPPORTED_CNI_VERSIONS[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
#define DEFAULT_CNI_VERSION "1.0.0"
#define DEFAULT_AGENT_SOCKET "/run/vpcnet/agent.sock"
#define DEFAULT_DEL_SPOOL_DIR "/var/lib/vpcnet/del-spool"
#define AGENT_CNI_PATH "/v1/cni"
#define SPOOL_FILE_SUFFIX ".del.json"
#define SPOOL_TEMP_PREFIX ".tmp-"
/* The largest request body the plugin sends and the agent reads (and the largest spool entry). */
#define MAX_REQUEST_BYTES 1048576
/* vpcnet's version (src/infra/version.ts), printed by `vpcnet --version`. */
#define VPCNET_VERSION "0.1.0"
/* What `vpcnet --help` prints (PLUGIN_USAGE in src/plugin/main.ts). */
#define PLUGIN_USAGE                                                                         \
  "Usage: vpcnet [--version | --help]\n"                                                      \
  "\n"                                                                                       \
  "The vpcnet CNI plugin. A container runtime runs it with no arguments: the request is the\n" \
  "CNI_* environment and the network configuration on stdin, and it forwards both to the\n"   \
  "vpcnet agent. Try it on a lab: vpcnetctl lab cni ADD --name L --pod NAMESPACE/NAME\n"

#define CNI_ERR_IO 5
#define CNI_ERR_DECODE 6
#define CNI_ERR_INVALID_NETCONF 7
#define CNI_ERR_TRY_AGAIN_LATER 11
#define CNI_ERR_PLUGIN_NOT_AVAILABLE 50
#define CNI_ERR_INTERNAL 100

#endif
