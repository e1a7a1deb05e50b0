/* A read request's scope, as src/dataplane/netlink/wire.ts writes it:
 *   " scope" then items separated by spaces: `link:<hex name>`, `route:<table>:<hex name>`,
 *   `rule:<priority>` (names as hex: any byte but NUL and '/' may be in a link's name). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "helper.h"

/* A link's name from hex: 1 to IFNAMSIZ-1 bytes. */
static int name_of_hex(const char *hex, size_t n, char name[IFNAMSIZ]) {
  if (n == 0 || n % 2 != 0 || n / 2 >= IFNAMSIZ) return -1;
  if (unhex(hex, n, name) < 0) return -1;
  name[n / 2] = '\0';
  return 0;
}

/* A decimal u32 that fills the text. */
static int u32_of_text(const char *text, size_t n, uint32_t *v) {
  if (n == 0 || n > 10) return -1;
  char buf[11];
  memcpy(buf, text, n);
  buf[n] = '\0';
  char *end;
  errno = 0;
  unsigned long long x = strtoull(buf, &end, 10);
  if (*end != '\0' || errno != 0 || x > UINT32_MAX || buf[0] < '0' || buf[0] > '9') return -1;
  *v = (uint32_t)x;
  return 0;
}

static int parse_item(const char *item, size_t n, struct read_scope *s) {
  const char *colon = memchr(item, ':', n);
  if (colon == NULL) return -1;
  size_t key = (size_t)(colon - item);
  const char *rest = colon + 1;
  size_t left = n - key - 1;
  if (key == 4 && memcmp(item, "link", 4) == 0) {
    if (s->nlinks == SCOPE_MAX) return -1;
    return name_of_hex(rest, left, s->links[s->nlinks++]);
  }
  if (key == 5 && memcmp(item, "route", 5) == 0) {
    const char *sep = memchr(rest, ':', left);
    if (sep == NULL || s->nroutes == SCOPE_MAX) return -1;
    size_t tlen = (size_t)(sep - rest);
    if (u32_of_text(rest, tlen, &s->routes[s->nroutes].table) < 0 || s->routes[s->nroutes].table == 0) return -1;
    return name_of_hex(sep + 1, left - tlen - 1, s->routes[s->nroutes++].dev);
  }
  if (key == 4 && memcmp(item, "rule", 4) == 0) {
    if (s->nrules == SCOPE_MAX) return -1;
    return u32_of_text(rest, left, &s->priorities[s->nrules++]);
  }
  return -1;
}

int read_scope_parse(const char *text, struct read_scope **out) {
  *out = NULL;
  if (strncmp(text, " scope", 6) != 0 || (text[6] != '\0' && text[6] != ' ')) return -1;
  struct read_scope *s = calloc(1, sizeof *s);
  if (s == NULL) die("out of memory");
  for (const char *p = text + 6; *p != '\0';) {
    if (*p++ != ' ') goto bad;
    size_t n = strcspn(p, " ");
    if (parse_item(p, n, s) < 0) goto bad;
    p += n;
  }
  *out = s;
  return 0;
bad:
  free(s);
  return -1;
}
