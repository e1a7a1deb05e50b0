/*
 * Shared by the native forwarder's files: the constants of the wire format, a bounded
 * buffer, and what each file offers the others. See vpcnet.c for why this forwarder exists.
 */
#ifndef VPCNET_H
#define VPCNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Constants shared with src/cni/wire.ts and src/cni/errors.ts (native.test.ts checks them). */

static const char *const SUPPORTED_CNI_VERSIONS[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
#define DEFAULT_CNI_VERSION "1.0.0"
#define DEFAULT_AGENT_SOCKET "/run/vpcnet/agent.sock"
#define DEFAULT_DEL_SPOOL_DIR "/var/lib/vpcnet/del-spool"
#define AGENT_CNI_PATH "/v1/cni"
#define SPOOL_FILE_SUFFIX ".del.json"
#define SPOOL_TEMP_PREFIX ".tmp-"

#define CNI_ERR_IO 5
#define CNI_ERR_DECODE 6
#define CNI_ERR_TRY_AGAIN_LATER 11
#define CNI_ERR_PLUGIN_NOT_AVAILABLE 50
#define CNI_ERR_INTERNAL 100

/* As forward.ts: connecting is immediate when the agent listens; an ADD may wait on the cloud. */
#define CONNECT_TIMEOUT_MS 2000
#define TOTAL_TIMEOUT_MS 120000

/* Bounds. A CNI config or result is a few KiB; these leave ample room. */
#define STDIN_MAX (1u << 20)
#define RESPONSE_MAX (1u << 20)
#define TEXT_MAX (3u * STDIN_MAX) /* UTF-8 decoding turns one invalid byte into 3 (U+FFFD) */
#define BODY_MAX (8u << 20)       /* escaping turns one byte into at most 6 (\u00XX) */
#define MSG_MAX (TEXT_MAX + 4096) /* messages may quote a socket path or dir from the config */

typedef unsigned char u8;

typedef unsigned char u8;

/* ---- A bounded output buffer: writes past the end set `overflow` instead of growing. */

struct buf {
  char *p;
  size_t len, cap;
  bool overflow;
};
#define BUF(storage) ((struct buf){(char *)(storage), 0, sizeof(storage), false})

static inline void put(struct buf *b, const void *s, size_t n) {
  if (b->overflow || n > b->cap - b->len) {
    b->overflow = true;
    return;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}
static inline void put_str(struct buf *b, const char *s) { put(b, s, strlen(s)); }
static inline void put_char(struct buf *b, char c) { put(b, &c, 1); }
static inline void put_buf(struct buf *b, const struct buf *s) { put(b, s->p, s->len); }

static inline bool is_digit(u8 c) { return c >= '0' && c <= '9'; }
static inline bool is_hex(u8 c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

/* ---- json.c: UTF-8 as Node decodes it, JSON strings as JSON.stringify writes them, and a
 * JSON reader as strict as JSON.parse. */

void put_utf8(struct buf *b, uint32_t cp);
void utf8_sanitize(const u8 *s, size_t n, struct buf *out);
void wtf8_to_utf8(char *s, size_t n);
void put_json_string(struct buf *b, const char *s, size_t n, bool wtf8);
void put_json_cstr(struct buf *b, const char *s);
void put_utf16_prefix(struct buf *b, const char *s, size_t n, size_t units);

struct json_field {
  const char *name;
  char kind; /* 0 when absent, else the value's first byte: '"', '{', '[', '-', digit, 't', 'f', 'n' */
  size_t at;
};
int json_scan(const u8 *s, size_t n, struct json_field *fields, size_t nfields);
void json_unescape(const u8 *s, size_t i, struct buf *out);

/* ---- node-errors.c: system errors worded as Node words them. */

const char *errno_name(int e);
void put_errno_text(struct buf *b, int e);

/* ---- forward.c: the request to the agent and its answer (forward.ts). */

enum outcome { AGENT_ANSWERED, AGENT_UNREACHABLE, AGENT_ANSWERED_BADLY };

struct agent_answer {
  int exit_code;
  struct buf *stdout_text; /* UTF-8 */
};

void put_request(struct buf *b, const char *stdin_text, size_t stdin_len);
enum outcome forward_to_agent(const char *path, const char *body, size_t body_len, struct agent_answer *a,
                              struct buf *reason);

/* ---- spool.c: the durable DEL spool (spool.ts). */

int spool_del(const char *dir, const char *data, size_t len, struct buf *why);

#endif
