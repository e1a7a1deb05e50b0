/* A growing text buffer for one JSON answer line. */
#ifndef VPCNET_NETLINK_JBUF_H
#define VPCNET_NETLINK_JBUF_H

#include <stdbool.h>
#include <stddef.h>

struct jbuf {
  char *data;
  size_t len, cap;
  bool oom;
};

void jbuf_init(struct jbuf *b);
void jbuf_free(struct jbuf *b);
void jbuf_raw(struct jbuf *b, const char *s);
void jbuf_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* `s` as a JSON string literal (quotes, escapes; bytes over 0x7f copied as they are). */
void jbuf_str(struct jbuf *b, const char *s);
/* `"key":` */
void jbuf_key(struct jbuf *b, const char *key);

#endif
