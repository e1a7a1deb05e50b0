/* The request to the agent and its answer: forwardToAgent() of src/plugin/forward.ts, HTTP/1.1
 * on the agent's unix socket. */
#define _GNU_SOURCE
#include "forward.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bounds.h"
#include "buf.h"
#include "bytes.h"
#include "json.h"
#include "node-errors.h"
#include "wire.h"

/* As forward.ts: connecting is immediate when the agent listens; an ADD may wait on the cloud.
 * A test build may shorten them (-DTOTAL_TIMEOUT_MS=...) to see the deadline hold. */
#ifndef CONNECT_TIMEOUT_MS
#define CONNECT_TIMEOUT_MS 2000
#endif
#ifndef TOTAL_TIMEOUT_MS
#define TOTAL_TIMEOUT_MS 120000
#endif

_Static_assert(SOCKET_PATH_MAX == sizeof(((struct sockaddr_un *)0)->sun_path) - 1, "sun_path size");

/* The request: CNI_* variables and stdin, as JSON.stringify({env, stdin}) writes it. */

extern char **environ;

/* The CNI_* names already sent, so that a repeated name keeps its first value (as Node's
 * process.env does) in linear time: a runtime may pass a huge environment, and comparing each
 * entry with all before it took seconds at 60,000 entries. Open addressing over environ indices
 * + 1. The kernel caps the environment at 6 MiB, under a million "CNI_x=" entries; should 3/4 of
 * the slots fill anyway, the plain scan takes over. */
#define SEEN_SLOTS (1u << 20)
static uint32_t seen_slots[SEEN_SLOTS];
static size_t seen_count;

static bool seen_before(size_t idx, size_t klen) {
  const char *name = environ[idx];
  if (seen_count >= SEEN_SLOTS / 4 * 3) {
    for (size_t p = 0; p < idx; p++) {
      if (strncmp(environ[p], name, klen + 1) == 0) return true;
    }
    return false;
  }
  uint32_t h = 2166136261u; /* FNV-1a of the name */
  for (size_t k = 0; k < klen; k++) h = (h ^ (u8)name[k]) * 16777619u;
  for (uint32_t s = h & (SEEN_SLOTS - 1);; s = (s + 1) & (SEEN_SLOTS - 1)) {
    if (seen_slots[s] == 0) {
      seen_slots[s] = (uint32_t)idx + 1, seen_count++;
      return false;
    }
    if (strncmp(environ[seen_slots[s] - 1], name, klen + 1) == 0) return true;
  }
}

void put_request(struct buf *b, const char *stdin_text, size_t stdin_len) {
  put_str(b, "{\"env\":{");
  bool first = true;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "CNI_", 4) != 0 || !eq) continue;
    size_t klen = (size_t)(eq - *e);
    if (seen_before((size_t)(e - environ), klen)) continue;
    if (!first) put_char(b, ',');
    first = false;
    put_json_string(b, *e, klen, false);
    put_char(b, ':');
    put_json_string(b, eq + 1, strlen(eq + 1), false);
  }
  put_str(b, "},\"stdin\":");
  put_json_string(b, stdin_text, stdin_len, false);
  put_char(b, '}');
}

static char response_raw[RESPONSE_RAW_MAX + 1];
static char response_body[RESPONSE_MAX];
static char response_text[3 * RESPONSE_MAX];

static bool header_is(const char *line, size_t len, const char *name) {
  size_t n = strlen(name);
  return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

static const char *header_value(const char *line, size_t len, size_t name_len, size_t *vlen) {
  const char *v = line + name_len + 1, *end = line + len;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
  *vlen = (size_t)(end - v);
  return v;
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

enum http_state { HTTP_INCOMPLETE, HTTP_DONE, HTTP_ERROR, HTTP_TOO_LARGE };

/* Parses the response in r[0..n); `eof` says the agent closed. Sets the status and copies the
 * (de-chunked) body into response_body. A body over RESPONSE_MAX is HTTP_TOO_LARGE as soon as
 * that many bytes of it are here, as forward.ts stops reading then. */
static enum http_state http_parse(const char *r, size_t n, bool eof, int *status, size_t *body_len, struct buf *reason) {
  size_t at = 0;
  for (;;) {
    size_t avail = n - at;
    if (memcmp(r + at, "HTTP/", avail < 5 ? avail : 5) != 0) {
      return put_str(reason, "Parse Error: Expected HTTP/, RTSP/ or ICE/"), HTTP_ERROR;
    }
    if (avail < 5) return eof ? (put_str(reason, "socket hang up"), HTTP_ERROR) : HTTP_INCOMPLETE;
    const char *end = memmem(r + at, n - at, "\r\n\r\n", 4);
    if (!end) return eof ? (put_str(reason, "socket hang up"), HTTP_ERROR) : HTTP_INCOMPLETE;
    const char *sp = memchr(r + at, ' ', (size_t)(end - (r + at)));
    if (!sp || end - sp < 4 || !is_digit((u8)sp[1]) || !is_digit((u8)sp[2]) || !is_digit((u8)sp[3])) {
      return put_str(reason, "Parse Error: Invalid status code"), HTTP_ERROR;
    }
    *status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
    long long content_length = -1;
    bool chunked = false;
    for (const char *line = memchr(r + at, '\n', n - at) + 1; line < end + 2;) {
      const char *eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
      size_t len = (size_t)(eol - line), vlen;
      if (header_is(line, len, "content-length")) {
        const char *v = header_value(line, len, 14, &vlen);
        content_length = 0;
        for (size_t k = 0; k < vlen; k++) {
          if (!is_digit((u8)v[k])) return put_str(reason, "Parse Error: Invalid character in Content-Length"), HTTP_ERROR;
          /* saturates past RESPONSE_MAX: such a body is too large once RESPONSE_MAX bytes came */
          if (content_length <= (long long)RESPONSE_MAX) content_length = content_length * 10 + (v[k] - '0');
        }
      } else if (header_is(line, len, "transfer-encoding")) {
        const char *v = header_value(line, len, 17, &vlen);
        chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
      }
      line = eol + 2;
    }
    at = (size_t)(end + 4 - r);
    if (*status >= 100 && *status < 200 && *status != 101) continue; /* interim answer: skip it */

    if (*status == 204 || *status == 304) {
      *body_len = 0;
    } else if (chunked) {
      struct buf body = BUF(response_body);
      for (;;) {
        const char *eol = memmem(r + at, n - at, "\r\n", 2);
        if (!eol) return eof ? (put_str(reason, "aborted"), HTTP_ERROR) : HTTP_INCOMPLETE;
        unsigned long long size = 0;
        const char *p = r + at;
        if (!is_hex((u8)*p)) return put_str(reason, "Parse Error: Invalid character in chunk size"), HTTP_ERROR;
        for (; p < eol && is_hex((u8)*p) && size <= RESPONSE_MAX; p++) size = size * 16 + (is_digit((u8)*p) ? (unsigned)(*p - '0') : (unsigned)((*p | 0x20) - 'a' + 10));
        at = (size_t)(eol + 2 - r);
        if (size == 0) { /* trailers end with an empty line */
          const char *fin = n - at >= 2 && memcmp(r + at, "\r\n", 2) == 0 ? r + at : memmem(r + at, n - at, "\r\n\r\n", 4);
          if (!fin) return eof ? (put_str(reason, "aborted"), HTTP_ERROR) : HTTP_INCOMPLETE;
          break;
        }
        if (body.len + (n - at < size ? n - at : size) > RESPONSE_MAX) return HTTP_TOO_LARGE;
        if (n - at < size + 2) return eof ? (put_str(reason, "aborted"), HTTP_ERROR) : HTTP_INCOMPLETE;
        put(&body, r + at, (size_t)size);
        at += (size_t)size + 2;
      }
      *body_len = body.len;
    } else if (content_length >= 0) {
      if (n - at < (size_t)content_length) {
        if (n - at > RESPONSE_MAX) return HTTP_TOO_LARGE;
        return eof ? (put_str(reason, "aborted"), HTTP_ERROR) : HTTP_INCOMPLETE;
      }
      *body_len = (size_t)content_length;
      memcpy(response_body, r + at, *body_len);
    } else {
      if (n - at > RESPONSE_MAX) return HTTP_TOO_LARGE;
      if (!eof) return HTTP_INCOMPLETE; /* the body runs to the end of the connection */
      *body_len = n - at;
      memcpy(response_body, r + at, *body_len);
    }
    return HTTP_DONE;
  }
}

/* decodeResponse() of forward.ts: {"exitCode": integer 0–255, "stdout": string}. */
static enum outcome decode_answer(const char *text, size_t n, struct agent_answer *a, struct buf *reason) {
  struct json_field f[2] = {{"exitCode", 0, 0}, {"stdout", 0, 0}};
  int top = json_scan((const u8 *)text, n, f, 2);
  if (top < 0) {
    put_str(reason, "body is not JSON: ");
    put_utf16_prefix(reason, text, n, 200);
    return AGENT_ANSWERED_BADLY;
  }
  if (top != '{' && top != '[') return put_str(reason, "body is not a JSON object"), AGENT_ANSWERED_BADLY;
  double code = f[0].kind == '-' || is_digit((u8)f[0].kind) ? strtod(text + f[0].at, NULL) : -1;
  if (!(code >= 0 && code <= 255 && code == (double)(int)code)) {
    return put_str(reason, "exitCode must be an integer 0\xE2\x80\x93" "255"), AGENT_ANSWERED_BADLY;
  }
  if (f[1].kind != '"') return put_str(reason, "stdout must be a string"), AGENT_ANSWERED_BADLY;
  a->exit_code = (int)code;
  json_unescape((const u8 *)text, f[1].at, a->stdout_text);
  wtf8_to_utf8(a->stdout_text->p, a->stdout_text->len);
  return AGENT_ANSWERED;
}

/* waits for `events` on fd until `deadline`; false (with the reason set) on timeout */
static bool wait_fd(int fd, short events, int64_t connect_deadline, int64_t deadline, struct buf *reason) {
  for (;;) {
    int64_t now = now_ms(), until = connect_deadline < deadline ? connect_deadline : deadline;
    if (now >= until) {
      char text[64];
      if (until == connect_deadline) snprintf(text, sizeof text, "no connection within %d ms", CONNECT_TIMEOUT_MS);
      else snprintf(text, sizeof text, "no answer within %d ms", TOTAL_TIMEOUT_MS);
      put_str(reason, text);
      return false;
    }
    struct pollfd pfd = {fd, events, 0};
    int r = poll(&pfd, 1, (int)(until - now));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true; /* let the next syscall report it */
  }
}

/* forwardToAgent() of forward.ts. `path` is WTF-8 (as the config held it). */
enum outcome forward_to_agent(const char *path, const char *body, size_t body_len, struct agent_answer *a,
                              struct buf *reason) {
  int64_t start = now_ms(), deadline = start + TOTAL_TIMEOUT_MS, connect_deadline = start + CONNECT_TIMEOUT_MS;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  /* libuv copies at most sizeof(sun_path) - 1 bytes and stops at a NUL; so do we */
  strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
  wtf8_to_utf8(addr.sun_path, strlen(addr.sun_path));

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return put_str(reason, "socket "), put_str(reason, errno_name(errno)), AGENT_UNREACHABLE;
  int r;
  do r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno == EINPROGRESS) {
    if (!wait_fd(fd, POLLOUT, connect_deadline, deadline, reason)) return close(fd), AGENT_UNREACHABLE;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    errno = err;
    r = err ? -1 : 0;
  }
  if (r < 0) { /* EAGAIN too: a full backlog fails at once in Node, and the runtime retries */
    put_str(reason, "connect "), put_str(reason, errno_name(errno)), put_char(reason, ' '), put_str(reason, path);
    return close(fd), AGENT_UNREACHABLE;
  }

  char head[256];
  int head_len = snprintf(head, sizeof head,
                          "POST " AGENT_CNI_PATH " HTTP/1.1\r\ncontent-type: application/json\r\n"
                          "content-length: %zu\r\nconnection: close\r\nHost: localhost\r\n\r\n",
                          body_len);
  const char *parts[2] = {head, body};
  size_t sizes[2] = {(size_t)head_len, body_len};
  for (int k = 0; k < 2; k++) {
    for (size_t off = 0; off < sizes[k];) {
      ssize_t w = send(fd, parts[k] + off, sizes[k] - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += (size_t)w;
      } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (!wait_fd(fd, POLLOUT, INT64_MAX, deadline, reason)) return close(fd), AGENT_UNREACHABLE;
      } else {
        put_str(reason, "write "), put_str(reason, errno_name(errno));
        return close(fd), AGENT_UNREACHABLE;
      }
    }
  }

  size_t n = 0, body_len_in = 0;
  int status = 0;
  for (;;) {
    if (!wait_fd(fd, POLLIN, INT64_MAX, deadline, reason)) return close(fd), AGENT_UNREACHABLE;
    ssize_t got = recv(fd, response_raw + n, sizeof response_raw - n, 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got < 0) {
      put_str(reason, "read "), put_str(reason, errno_name(errno));
      return close(fd), AGENT_UNREACHABLE;
    }
    n += (size_t)got;
    /* a full buffer: a body over RESPONSE_MAX, or a head or chunk framing over 64 KiB */
    enum http_state st =
        n > RESPONSE_RAW_MAX ? HTTP_TOO_LARGE : http_parse(response_raw, n, got == 0, &status, &body_len_in, reason);
    if (st == HTTP_TOO_LARGE) {
      close(fd);
      return put_str(reason, "response larger than 1048576 bytes"), AGENT_ANSWERED_BADLY;
    }
    if (st == HTTP_ERROR) return close(fd), AGENT_UNREACHABLE; /* Node reports these as request errors */
    if (st == HTTP_DONE) break;
  }
  close(fd);

  /* whatever its body says: the request cannot pass, so never "try again later" */
  if (status == 413) return AGENT_REFUSED_TOO_LARGE;
  struct buf text = BUF(response_text);
  utf8_sanitize((const u8 *)response_body, body_len_in, &text);
  if (status != 200) {
    /* a refusal the agent worded as a CNI error (413, 400, ...) is printed as it is */
    size_t mark = reason->len;
    if (decode_answer(text.p, text.len, a, reason) == AGENT_ANSWERED && a->exit_code != 0) return AGENT_ANSWERED;
    reason->len = mark, reason->overflow = false;
    a->stdout_text->len = 0, a->stdout_text->overflow = false;
    char num[16];
    snprintf(num, sizeof num, "HTTP %d: ", status);
    put_str(reason, num);
    put_utf16_prefix(reason, text.p, text.len, 200);
    return AGENT_ANSWERED_BADLY;
  }
  return decode_answer(text.p, text.len, a, reason);
}
