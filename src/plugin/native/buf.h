/* A bounded output buffer over caller-owned storage: writes past the end set `overflow` instead of
 * growing, so the forwarder needs no heap and reports an oversized input instead of failing. */
#ifndef VPCNET_BUF_H
#define VPCNET_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct buf {
  char *p;
  size_t len, cap;
  bool overflow;
  size_t wanted; /* every byte put, kept or not: how large the text would have been */
};
#define BUF(storage) ((struct buf){(char *)(storage), 0, sizeof(storage), false, 0})

static inline void put(struct buf *b, const void *s, size_t n) {
  b->wanted += n;
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

#endif
