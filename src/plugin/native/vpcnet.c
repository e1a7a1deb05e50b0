/*
 * bin/vpcnet: the vpcnet CNI plugin, as a small native forwarder.
 *
 * Why native: the plugin is exec'd once per pod operation, and Node's own start is larger than
 * the rest of an ADD (docs/design.md, The plugin). These files do exactly what the TypeScript
 * forwarder (src/plugin/main.ts, forward.ts, src/spool/write.ts) does, which stays the spec and is still built as
 * bin/vpcnet-js; src/plugin/native-*.test.ts run both against the same scenarios.
 *
 * What it does: read stdin and the CNI_* environment, answer VERSION itself, otherwise POST
 * {"env":{...},"stdin":"..."} to the agent (HTTP/1.1 on its unix socket, src/cni/wire.ts) and
 * print the answer's stdout with its exit code. When the agent cannot be reached: DEL is
 * spooled durably and succeeds, STATUS fails with 50, everything else with 11.
 *
 * Byte-for-byte agreement with Node is the point, so a few Node behaviours are copied on
 * purpose: text is decoded as UTF-8 with U+FFFD for invalid bytes (the WHATWG rule Buffer
 * uses), JSON strings are escaped as JSON.stringify does, error reasons read like Node's
 * ("connect ENOENT /run/vpcnet/agent.sock"), and JSON is validated as strictly as JSON.parse.
 *
 * Files: json.c (UTF-8 and JSON as Node does them), forward.c (the agent request, forward.ts),
 * spool.c (spool.ts), node-errors.c (Node's wording of system errors), vpcnet.c (main.ts), each
 * .c but this one with a header declaring what it offers; buf.h (the bounded buffer), bytes.h,
 * bounds.h (buffer sizes) and wire.h (constants shared with src/cni) stand alone.
 *
 * No heap: every buffer is static and bounded; an input over a bound is reported as an
 * error naming the bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bounds.h"
#include "buf.h"
#include "bytes.h"
#include "forward.h"
#include "json.h"
#include "spool.h"
#include "wire.h"

/* Writes everything, through EINTR, partial writes and a non-blocking stdout. */
static bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pfd = {fd, POLLOUT, 0};
      poll(&pfd, 1, -1);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= (size_t)w;
  }
  return true;
}

/* runPlugin() of main.ts. */

static char stdin_raw[STDIN_MAX + 1];
static char answer_stdout[3 * RESPONSE_MAX];
static char stdin_text[TEXT_MAX];
static char config_strings[TEXT_MAX + 8];
static char request_body[BODY_MAX];
static char out_store[MSG_MAX * 2 + 256];
static char msg_store[MSG_MAX], details_store[MSG_MAX], reason_store[MSG_MAX], why_store[MSG_MAX];

/* Reads all of stdin; -1 past STDIN_MAX. Like readFileSync(0) a read error means "no stdin". */
static long read_stdin(void) {
  size_t n = 0;
  for (;;) {
    ssize_t r = read(0, stdin_raw + n, sizeof stdin_raw - n);
    if (r > 0) {
      n += (size_t)r;
      if (n > STDIN_MAX) return -1;
    } else if (r == 0) {
      return (long)n;
    } else if (errno == EAGAIN) { /* a non-blocking pipe: wait for it */
      struct pollfd pfd = {0, POLLIN, 0};
      poll(&pfd, 1, -1);
    } else if (errno != EINTR) {
      return 0;
    }
  }
}

/* Prints the CNI error object (CniError.toJson field order) and returns the exit status 1. */
static int fail(const char *cni_version, int code, const struct buf *msg, const struct buf *details) {
  struct buf out = BUF(out_store);
  char num[16];
  snprintf(num, sizeof num, "%d", code);
  put_str(&out, "{\"cniVersion\":"), put_json_cstr(&out, cni_version);
  put_str(&out, ",\"code\":"), put_str(&out, num);
  put_str(&out, ",\"msg\":"), put_json_string(&out, msg->p, msg->len, true);
  if (details) put_str(&out, ",\"details\":"), put_json_string(&out, details->p, details->len, true);
  put_char(&out, '}');
  write_all(1, out.p, out.len);
  return 1;
}

/* requestTooLargeMessage() of src/cni/wire.ts */
static void put_request_too_large(struct buf *msg) {
  char text[96];
  snprintf(text, sizeof text, "request to the vpcnet agent is larger than %u bytes", (unsigned)MAX_REQUEST_BYTES);
  put_str(msg, text);
}

/* A runtime passes no arguments (the request is the environment and stdin). A person at a terminal
 * may: --version and --help answer, anything else is refused, all before stdin is read (it would
 * wait on the terminal). The texts are the TypeScript forwarder's (main.ts), byte for byte. */
static int command_line(int argc, char **argv) {
  struct buf out = BUF(out_store);
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    put_str(&out, "vpcnet CNI plugin " VPCNET_VERSION " (CNI spec");
    for (size_t k = 0; k < sizeof SUPPORTED_CNI_VERSIONS / sizeof *SUPPORTED_CNI_VERSIONS; k++) {
      put_str(&out, k ? ", " : " "), put_str(&out, SUPPORTED_CNI_VERSIONS[k]);
    }
    put_str(&out, ")\n");
    return write_all(1, out.p, out.len) ? 0 : 1;
  }
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    put_str(&out, PLUGIN_USAGE);
    return write_all(1, out.p, out.len) ? 0 : 1;
  }
  static const char before[] = "vpcnet: unknown argument '";
  static const char after[] = "': a runtime runs this plugin with no arguments (see vpcnet --help)\n";
  write_all(2, before, sizeof before - 1);
  write_all(2, argv[1], strlen(argv[1]));
  write_all(2, after, sizeof after - 1);
  return 2;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error to report, not a reason to die (as in Node) */
  if (argc > 1) return command_line(argc, argv);
  long raw_len = read_stdin();
  struct buf text = BUF(stdin_text);
  if (raw_len > 0) utf8_sanitize((const u8 *)stdin_raw, (size_t)raw_len, &text);
  /* a request holds stdin whole (decoded: never shorter than the raw bytes), so it cannot fit */
  bool stdin_too_large = raw_len < 0 || text.len > MAX_REQUEST_BYTES;

  /* looseConfig(): just the keys the plugin itself needs; non-empty strings only */
  struct json_field f[3] = {{"cniVersion", 0, 0}, {"agentSocket", 0, 0}, {"delSpoolDir", 0, 0}};
  bool parsed = !stdin_too_large && json_scan((const u8 *)text.p, text.len, f, 3) == '{';
  const char *conf[3] = {NULL, NULL, NULL};
  size_t conf_len[3] = {0, 0, 0}; /* a value may hold a NUL (\u0000), so C string ends do not tell */
  struct buf strings = BUF(config_strings);
  for (int k = 0; k < 3 && parsed; k++) {
    if (f[k].kind != '"') continue;
    size_t at = strings.len;
    json_unescape((const u8 *)text.p, f[k].at, &strings);
    put_char(&strings, 0);
    if (strings.len - at > 1) conf[k] = strings.p + at, conf_len[k] = strings.len - at - 1;
  }
  const char *cni_version = conf[0], *socket_path = conf[1] ? conf[1] : DEFAULT_AGENT_SOCKET;
  const char *spool_dir = conf[2] ? conf[2] : DEFAULT_DEL_SPOOL_DIR;
  size_t socket_len = conf[1] ? conf_len[1] : strlen(DEFAULT_AGENT_SOCKET);
  bool spool_dir_has_nul = conf[2] && memchr(conf[2], 0, conf_len[2]) != NULL;
  const char *error_version = cni_version ? cni_version : DEFAULT_CNI_VERSION;
  const char *command = getenv("CNI_COMMAND");
  struct buf msg = BUF(msg_store), details = BUF(details_store), reason = BUF(reason_store);

  if (command && strcmp(command, "VERSION") == 0) {
    /* echo the requested version when we speak it, so the runtime can decode the answer */
    const char *answer = DEFAULT_CNI_VERSION;
    struct buf out = BUF(out_store);
    for (size_t k = 0; k < sizeof SUPPORTED_CNI_VERSIONS / sizeof *SUPPORTED_CNI_VERSIONS; k++) {
      if (cni_version && strcmp(cni_version, SUPPORTED_CNI_VERSIONS[k]) == 0) answer = SUPPORTED_CNI_VERSIONS[k];
    }
    put_str(&out, "{\"cniVersion\":\""), put_str(&out, answer), put_str(&out, "\",\"supportedVersions\":[");
    for (size_t k = 0; k < sizeof SUPPORTED_CNI_VERSIONS / sizeof *SUPPORTED_CNI_VERSIONS; k++) {
      put_str(&out, k ? ",\"" : "\""), put_str(&out, SUPPORTED_CNI_VERSIONS[k]), put_char(&out, '"');
    }
    put_str(&out, "]}");
    write_all(1, out.p, out.len);
    return 0;
  }

  /* without a readable config the plugin cannot know which agent to ask */
  /* One limit with the agent, checked before connecting: an oversized request is a config error
   * (the configuration is what grows: prevResult, runtimeConfig), never "try again later", and
   * an oversized DEL is never spooled. */
  if (stdin_too_large) {
    put_request_too_large(&msg);
    put_str(&details, "the network configuration on stdin alone is larger than that");
    return fail(error_version, CNI_ERR_INVALID_NETCONF, &msg, &details);
  }
  if (!parsed) {
    put_str(&msg, "network configuration on stdin is not a JSON object");
    return fail(error_version, CNI_ERR_DECODE, &msg, NULL);
  }

  /* a socket path no socket can have would reach some other socket or none: a config error */
  if (memchr(socket_path, 0, socket_len)) {
    put_str(&msg, "config.agentSocket contains a NUL byte");
    put(&details, socket_path, socket_len);
    return fail(error_version, CNI_ERR_INVALID_NETCONF, &msg, &details);
  }
  if (socket_len > SOCKET_PATH_MAX) {
    char text_len[128];
    snprintf(text_len, sizeof text_len, "config.agentSocket is %zu bytes long, more than the %u a unix socket path can hold",
             socket_len, SOCKET_PATH_MAX);
    put_str(&msg, text_len);
    put_str(&details, socket_path);
    return fail(error_version, CNI_ERR_INVALID_NETCONF, &msg, &details);
  }

  struct buf body = BUF(request_body);
  put_request(&body, text.p, text.len);
  if (body.overflow) {
    char size[96];
    snprintf(size, sizeof size, "%zu bytes of network configuration and CNI_* environment", body.wanted);
    put_request_too_large(&msg);
    put_str(&details, size);
    return fail(error_version, CNI_ERR_INVALID_NETCONF, &msg, &details);
  }

  struct buf answer_text = BUF(answer_stdout);
  struct agent_answer answer = {0, &answer_text};
  switch (forward_to_agent(socket_path, body.p, body.len, &answer, &reason)) {
    case AGENT_ANSWERED:
      write_all(1, answer_text.p, answer_text.len);
      return answer.exit_code;
    case AGENT_ANSWERED_BADLY:
      put_str(&msg, "vpcnet agent request failed");
      put_str(&details, "vpcnet agent at "), put_str(&details, socket_path), put_str(&details, " answered badly: ");
      put_buf(&details, &reason);
      return fail(error_version, CNI_ERR_INTERNAL, &msg, &details);
    case AGENT_REFUSED_TOO_LARGE:
      put_request_too_large(&msg);
      put_str(&details, "the vpcnet agent at "), put_str(&details, socket_path), put_str(&details, " refused it (HTTP 413)");
      return fail(error_version, CNI_ERR_INVALID_NETCONF, &msg, &details);
    case AGENT_UNREACHABLE:
      break;
  }
  struct buf why = BUF(why_store);
  put_str(&why, "vpcnet agent not reachable at "), put_str(&why, socket_path), put_str(&why, ": ");
  put_buf(&why, &reason);
  if (strcmp(command ? command : "", "DEL") == 0) {
    /* a path with a NUL names no file (system calls stop at the NUL): a config error */
    if (spool_dir_has_nul) {
      put_str(&msg, "config.delSpoolDir contains a NUL byte");
      return fail(error_version, CNI_ERR_INVALID_NETCONF, &msg, &why);
    }
    /* the agent applies spooled DELs before serving, so the runtime may forget this pod now */
    if (spool_del(spool_dir, body.p, body.len, &details) == 0) return 0;
    put_str(&details, "; "), put_buf(&details, &why);
    put_str(&msg, "cannot spool DEL in "), put_str(&msg, spool_dir);
    return fail(error_version, CNI_ERR_IO, &msg, &details);
  }
  if (strcmp(command ? command : "", "STATUS") == 0) return fail(error_version, CNI_ERR_PLUGIN_NOT_AVAILABLE, &why, NULL);
  put_str(&why, "; try again later");
  return fail(error_version, CNI_ERR_TRY_AGAIN_LATER, &why, NULL);
}

