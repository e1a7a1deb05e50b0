/* UTF-8 and JSON, exactly as Node handles them: see json.h. */
#define _GNU_SOURCE
#include "json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bounds.h"
#include "buf.h"
#include "bytes.h"

/* UTF-8. Strings taken out of JSON are kept as WTF-8: a lone \uD800 becomes the 3-byte
 * encoding of the surrogate, so that re-escaping it gives "\ud800" as JSON.stringify would. */

/* Decodes one code point at s[*i]. An invalid sequence yields U+FFFD and consumes its maximal
 * subpart (the WHATWG decoder, which Buffer.toString('utf8') follows). With `wtf8`, an encoded
 * surrogate (ED A0..BF xx) decodes to the surrogate instead. */
static uint32_t utf8_next(const u8 *s, size_t n, size_t *i, bool wtf8) {
  u8 b = s[(*i)++];
  if (b < 0x80) return b;
  int need;
  uint32_t cp;
  u8 lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1, cp = b & 0x1Fu;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2, cp = b & 0x0Fu;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED && !wtf8) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3, cp = b & 0x07u;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0xFFFD;
  }
  for (; need > 0; need--) {
    if (*i >= n || s[*i] < lo || s[*i] > hi) return 0xFFFD; /* that byte starts the next one */
    cp = (cp << 6) | (s[(*i)++] & 0x3Fu);
    lo = 0x80, hi = 0xBF;
  }
  return cp;
}

static void put_utf8(struct buf *b, uint32_t cp) {
  u8 o[4];
  size_t n;
  if (cp < 0x80) {
    o[0] = (u8)cp, n = 1;
  } else if (cp < 0x800) {
    o[0] = (u8)(0xC0 | cp >> 6), o[1] = (u8)(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    o[0] = (u8)(0xE0 | cp >> 12), o[1] = (u8)(0x80 | (cp >> 6 & 0x3F)), o[2] = (u8)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    o[0] = (u8)(0xF0 | cp >> 18), o[1] = (u8)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (u8)(0x80 | (cp >> 6 & 0x3F)), o[3] = (u8)(0x80 | (cp & 0x3F)), n = 4;
  }
  put(b, o, n);
}

/* Raw bytes -> valid UTF-8, as Node decodes stdin, environment and response bodies. */
void utf8_sanitize(const u8 *s, size_t n, struct buf *out) {
  for (size_t i = 0; i < n;) put_utf8(out, utf8_next(s, n, &i, false));
}

/* WTF-8 -> UTF-8 in place: a lone surrogate becomes U+FFFD (same length), as Node writes a
 * JS string with one. Only lead bytes can be 0xED in WTF-8, so a byte scan is enough. */
void wtf8_to_utf8(char *s, size_t n) {
  for (size_t i = 0; i + 2 < n; i++) {
    if ((u8)s[i] == 0xED && (u8)s[i + 1] >= 0xA0) s[i] = (char)0xEF, s[i + 1] = (char)0xBF, s[i + 2] = (char)0xBD;
  }
}

/* A JSON string literal exactly as JSON.stringify writes it. */
void put_json_string(struct buf *b, const char *s, size_t n, bool wtf8) {
  static const char hex[] = "0123456789abcdef";
  put_char(b, '"');
  for (size_t i = 0; i < n;) {
    uint32_t cp = utf8_next((const u8 *)s, n, &i, wtf8);
    switch (cp) {
      case '"': put_str(b, "\\\""); break;
      case '\\': put_str(b, "\\\\"); break;
      case '\b': put_str(b, "\\b"); break;
      case '\f': put_str(b, "\\f"); break;
      case '\n': put_str(b, "\\n"); break;
      case '\r': put_str(b, "\\r"); break;
      case '\t': put_str(b, "\\t"); break;
      default:
        if (cp < 0x20 || (cp >= 0xD800 && cp <= 0xDFFF)) {
          char e[6] = {'\\', 'u', hex[cp >> 12], hex[cp >> 8 & 15], hex[cp >> 4 & 15], hex[cp & 15]};
          put(b, e, 6);
        } else {
          put_utf8(b, cp);
        }
    }
  }
  put_char(b, '"');
}
void put_json_cstr(struct buf *b, const char *s) { put_json_string(b, s, strlen(s), true); }

/* String.prototype.slice(0, units) on valid UTF-8: counts UTF-16 code units, and cutting a
 * surrogate pair in half keeps the high surrogate (as WTF-8), exactly as JS does. */
void put_utf16_prefix(struct buf *b, const char *s, size_t n, size_t units) {
  for (size_t i = 0, u = 0; i < n && u < units;) {
    uint32_t cp = utf8_next((const u8 *)s, n, &i, true);
    if (cp < 0x10000) {
      put_utf8(b, cp), u += 1;
    } else if (u + 1 < units) {
      put_utf8(b, cp), u += 2;
    } else {
      put_utf8(b, 0xD800 + ((cp - 0x10000) >> 10)), u += 1;
    }
  }
}

/* A JSON reader: validates a whole document as JSON.parse does (any depth, strict
 * grammar) and notes where the wanted top-level object members start (the last one wins, as
 * with JSON.parse). Values are decoded on demand with json_unescape. */

static u8 json_stack[TEXT_MAX / 8 + 1]; /* one bit per open container: 1 = object, 0 = array */

static size_t json_ws(const u8 *s, size_t n, size_t i) {
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  return i;
}


/* s[*i] is '"'; on success *i is just past the closing quote. */
static bool json_skip_string(const u8 *s, size_t n, size_t *i) {
  for (size_t j = *i + 1; j < n; j++) {
    if (s[j] == '"') {
      *i = j + 1;
      return true;
    }
    if (s[j] < 0x20) return false;
    if (s[j] != '\\') continue;
    if (++j >= n) return false;
    if (s[j] == 'u') {
      if (j + 4 >= n || !is_hex(s[j + 1]) || !is_hex(s[j + 2]) || !is_hex(s[j + 3]) || !is_hex(s[j + 4])) return false;
      j += 4;
    } else if (!strchr("\"\\/bfnrt", s[j]) || s[j] == 0) {
      return false;
    }
  }
  return false;
}

static bool json_skip_number(const u8 *s, size_t n, size_t *i) {
  size_t j = *i;
  if (j < n && s[j] == '-') j++;
  if (j < n && s[j] == '0') {
    j++;
  } else if (j < n && is_digit(s[j])) {
    while (j < n && is_digit(s[j])) j++;
  } else {
    return false;
  }
  if (j < n && s[j] == '.') {
    if (++j >= n || !is_digit(s[j])) return false;
    while (j < n && is_digit(s[j])) j++;
  }
  if (j < n && (s[j] == 'e' || s[j] == 'E')) {
    if (++j < n && (s[j] == '+' || s[j] == '-')) j++;
    if (j >= n || !is_digit(s[j])) return false;
    while (j < n && is_digit(s[j])) j++;
  }
  *i = j;
  return true;
}

static uint32_t hex4(const u8 *s) {
  uint32_t v = 0;
  for (int k = 0; k < 4; k++) v = v << 4 | (uint32_t)(is_digit(s[k]) ? s[k] - '0' : (s[k] | 0x20) - 'a' + 10);
  return v;
}

/* Decodes the (already validated) string literal at s[i] into WTF-8. */
void json_unescape(const u8 *s, size_t i, struct buf *out) {
  for (i++; s[i] != '"'; i++) {
    if (s[i] != '\\') {
      put_char(out, (char)s[i]);
      continue;
    }
    u8 e = s[++i];
    if (e != 'u') {
      put_char(out, e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : (char)e);
      continue;
    }
    uint32_t cp = hex4(s + i + 1);
    i += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF && s[i + 1] == '\\' && s[i + 2] == 'u') {
      uint32_t lo = hex4(s + i + 3);
      if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00), i += 6;
    }
    put_utf8(out, cp);
  }
}

/* Returns the top-level value's first byte ('{', '[', '"', ...) or -1 if `s` is not JSON. */
int json_scan(const u8 *s, size_t n, struct json_field *fields, size_t nfields) {
  size_t depth = 0, i = json_ws(s, n, 0);
  int top = i < n ? s[i] : -1;
  for (size_t k = 0; k < nfields; k++) fields[k].kind = 0;
#define TOP_IS_OBJECT() (json_stack[(depth - 1) / 8] >> ((depth - 1) % 8) & 1)
#define PUSH(obj) (json_stack[depth / 8] = (u8)((json_stack[depth / 8] & ~(1u << depth % 8)) | (unsigned)(obj) << depth % 8), depth++)
value:
  i = json_ws(s, n, i);
  if (i >= n) return -1;
  switch (s[i]) {
    case '{':
      PUSH(1);
      i = json_ws(s, n, i + 1);
      if (i < n && s[i] == '}') {
        i++, depth--;
        goto after_value;
      }
      goto member;
    case '[':
      PUSH(0);
      i = json_ws(s, n, i + 1);
      if (i < n && s[i] == ']') {
        i++, depth--;
        goto after_value;
      }
      goto value;
    case '"':
      if (!json_skip_string(s, n, &i)) return -1;
      goto after_value;
    case 't':
    case 'f':
    case 'n': {
      const char *lit = s[i] == 't' ? "true" : s[i] == 'f' ? "false" : "null";
      size_t len = strlen(lit);
      if (n - i < len || memcmp(s + i, lit, len) != 0) return -1;
      i += len;
      goto after_value;
    }
    default:
      if (!json_skip_number(s, n, &i)) return -1;
      goto after_value;
  }
member: /* at the opening quote of a key */
  if (i >= n || s[i] != '"') return -1;
  {
    size_t key_at = i;
    if (!json_skip_string(s, n, &i)) return -1;
    i = json_ws(s, n, i);
    if (i >= n || s[i] != ':') return -1;
    i = json_ws(s, n, i + 1);
    if (depth == 1 && i < n) {
      char key_store[32];
      struct buf key = BUF(key_store);
      json_unescape(s, key_at, &key);
      for (size_t k = 0; k < nfields && !key.overflow; k++) {
        if (strlen(fields[k].name) == key.len && memcmp(fields[k].name, key.p, key.len) == 0) {
          fields[k].kind = (char)s[i], fields[k].at = i;
        }
      }
    }
  }
  goto value;
after_value:
  if (depth == 0) return json_ws(s, n, i) == n ? top : -1;
  i = json_ws(s, n, i);
  if (i >= n) return -1;
  if (TOP_IS_OBJECT()) {
    if (s[i] == ',') {
      i = json_ws(s, n, i + 1);
      goto member;
    }
    if (s[i] != '}') return -1;
  } else {
    if (s[i] == ',') {
      i++;
      goto value;
    }
    if (s[i] != ']') return -1;
  }
  i++, depth--;
  goto after_value;
#undef TOP_IS_OBJECT
#undef PUSH
}
