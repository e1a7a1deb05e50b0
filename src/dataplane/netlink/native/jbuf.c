#define _GNU_SOURCE
#include "jbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jbuf_init(struct jbuf *b) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->oom = false;
}

void jbuf_free(struct jbuf *b) {
  free(b->data);
  jbuf_init(b);
}

static bool reserve(struct jbuf *b, size_t more) {
  if (b->oom) return false;
  if (b->len + more + 1 <= b->cap) return true;
  size_t cap = b->cap == 0 ? 1024 : b->cap;
  while (cap < b->len + more + 1) cap *= 2;
  char *d = realloc(b->data, cap);
  if (d == NULL) {
    b->oom = true;
    return false;
  }
  b->data = d;
  b->cap = cap;
  return true;
}

static void append(struct jbuf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void jbuf_raw(struct jbuf *b, const char *s) { append(b, s, strlen(s)); }

void jbuf_printf(struct jbuf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    append(b, small, (size_t)n);
    return;
  }
  if (!reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void jbuf_str(struct jbuf *b, const char *s) {
  append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p};
      append(b, esc, 2);
    } else if (*p < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", *p);
      append(b, esc, 6);
    } else {
      append(b, (const char *)p, 1);
    }
  }
  append(b, "\"", 1);
}

void jbuf_key(struct jbuf *b, const char *key) {
  jbuf_str(b, key);
  append(b, ":", 1);
}
