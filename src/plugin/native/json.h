/* json.c: UTF-8 as Node decodes it, JSON strings as JSON.stringify writes them, and a JSON
 * reader as strict as JSON.parse. Strings taken out of JSON are WTF-8 (see json.c). */
#ifndef VPCNET_JSON_H
#define VPCNET_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "bytes.h"

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

#endif
