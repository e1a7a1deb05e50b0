/* Reads of a namespace, rendered with the key names and value forms of `ip -d -j` so the Linux
 * driver's parser (src/dataplane/ip-cli/ip-json.ts) turns both into the same views. This file runs
 * the dumps; dump-links.c and dump-routing.c render their messages. */
#define _GNU_SOURCE
#include "dump.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump-view.h"

/* Attributes of a message or a nest, by type (types beyond `max` are ignored). */
void attrs(const void *start, size_t len, const struct rtattr **tb, int max) {
  memset(tb, 0, sizeof(*tb) * (size_t)(max + 1));
  for (const struct rtattr *a = start; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    int type = a->rta_type & ~NLA_F_NESTED;
    if (type <= max && tb[type] == NULL) tb[type] = a;
  }
}

uint32_t u32_of(const struct rtattr *a) { return *(const uint32_t *)RTA_DATA(a); }

const char *name_of(const struct dump *d, int index, char fallback[IFNAMSIZ + 8]) {
  for (size_t i = 0; i < d->links.n; i++)
    if (d->links.items[i].index == index) return d->links.items[i].name;
  snprintf(fallback, IFNAMSIZ + 8, "if%d", index);
  return fallback;
}

void comma(struct dump *d) {
  if (!d->first) jbuf_raw(d->out, ",");
  d->first = 0;
}

void key_addr(struct jbuf *b, const char *key, int family, const struct rtattr *a) {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(family, RTA_DATA(a), text, sizeof text) == NULL) return;
  jbuf_raw(b, ",");
  jbuf_key(b, key);
  jbuf_str(b, text);
}

const char *table_name(uint32_t t, char buf[16]) {
  if (t == RT_TABLE_MAIN) return "main";
  if (t == RT_TABLE_LOCAL) return "local";
  if (t == RT_TABLE_DEFAULT) return "default";
  snprintf(buf, 16, "%u", t);
  return buf;
}

/* The family header a dump request of `type` carries: exactly the size the kernel parses
 * attributes after. A longer one leaves bytes the kernel reads as a malformed attribute, and it
 * logs "bytes leftover after parsing attributes" (the neighbour dump parses them even without
 * strict checking). */
static size_t dump_header_size(uint16_t type) {
  switch (type) {
    case RTM_GETLINK:
      return sizeof(struct ifinfomsg);
    case RTM_GETADDR:
      return sizeof(struct ifaddrmsg);
    case RTM_GETROUTE:
      return sizeof(struct rtmsg);
    case RTM_GETRULE:
      return sizeof(struct fib_rule_hdr);
    case RTM_GETNEIGH:
      return sizeof(struct ndmsg);
    default:
      abort();
  }
}

void *dump_request(struct rtnl_msg *m, uint16_t type, unsigned char family) {
  /* Every one of these headers begins with the family byte; the rest stays zero (no filter). */
  union {
    struct ifinfomsg link;
    struct ifaddrmsg addr;
    struct rtmsg route;
    struct fib_rule_hdr rule;
    struct ndmsg neigh;
    unsigned char family;
  } hdr;
  memset(&hdr, 0, sizeof hdr);
  hdr.family = family;
  return rtnl_start(m, type, 0, &hdr, dump_header_size(type));
}

static int request_dump(struct rtnl *r, uint16_t type, unsigned char family, rtnl_each each, void *ctx) {
  struct rtnl_msg m;
  dump_request(&m, type, family);
  return rtnl_dump(r, &m, each, ctx);
}

int keep(struct dump *d) {
  if (d->bound != 0 && d->kept >= d->bound) return TOO_MANY;
  d->kept++;
  return 0;
}

int index_of(const struct dump *d, const char *name) {
  for (size_t i = 0; i < d->links.n; i++)
    if (strcmp(d->links.items[i].name, name) == 0) return d->links.items[i].index;
  return 0;
}

void step(struct dump *d, const char *ip_words, const char *kind) {
  snprintf(d->step, sizeof d->step, "%s", ip_words);
  snprintf(d->kind, sizeof d->kind, "%s", kind);
  d->kept = 0;
}

bool dump_strict_check = true;

/* One attempt at a whole namespace. */
static int dump_whole(struct rtnl *r, struct dump *d, bool with_neighbours) {
  struct jbuf *out = d->out;
  step(d, "addr show", "links");
  int rc = request_dump(r, RTM_GETLINK, AF_UNSPEC, collect_link, d);
  if (rc < 0) return rc;
  step(d, "addr show", "addresses");
  rc = request_dump(r, RTM_GETADDR, AF_UNSPEC, keep_addr, d);
  if (rc < 0) return rc;
  /* The links again, listed with their addresses (the names came first: others refer to indexes). */
  jbuf_raw(out, "\"links\":[");
  d->first = 1;
  rc = request_dump(r, RTM_GETLINK, AF_UNSPEC, emit_link, d);
  if (rc < 0) return rc;
  step(d, "route show table all", "routes");
  jbuf_raw(out, "],\"routes\":[");
  d->first = 1;
  rc = request_dump(r, RTM_GETROUTE, AF_UNSPEC, emit_route, d);
  if (rc < 0) return rc;
  step(d, "rule show", "rules");
  jbuf_raw(out, "],\"rules\":[");
  d->first = 1;
  rc = request_dump(r, RTM_GETRULE, AF_INET, emit_rule, d);
  if (rc < 0) return rc;
  if (with_neighbours) {
    step(d, "neigh show", "neighbours");
    jbuf_raw(out, "],\"neighbours\":[");
    d->first = 1;
    rc = request_dump(r, RTM_GETNEIGH, AF_UNSPEC, emit_neighbour, d);
    if (rc < 0) return rc;
  }
  jbuf_raw(out, "]");
  return 0;
}

static int once(struct rtnl *r, struct jbuf *out, bool pod, const struct read_scope *scope, char *msg,
                size_t len) {
  struct dump d = {.out = out, .bound = pod ? POD_READ_BOUND : 0};
  int rc = scope != NULL ? dump_scoped(r, &d, scope) : dump_whole(r, &d, pod);
  if (rc == 0) {
    jbuf_printf(out,
                ",\"received\":{\"links\":%zu,\"addresses\":%zu,\"routes\":%zu,\"rules\":%zu,\"neighbours\":%zu}",
                d.received.links, d.received.addresses, d.received.routes, d.received.rules,
                d.received.neighbours);
  } else if (rc == TOO_MANY) {
    snprintf(msg, len, "holds more than %zu %s; vpcnet reads no more of a kind in a pod's namespace", d.bound,
             d.kind);
  } else if (rc == -EINTR) {
    snprintf(msg, len, "%s: the namespace kept changing during %d dumps", d.step, NETLINK_DUMP_ATTEMPTS);
  } else {
    snprintf(msg, len, "%s: RTNETLINK answers: %s", d.step, strerror(-rc));
  }
  free(d.links.items);
  free(d.addrs.data);
  return rc;
}

int dump_namespace(struct rtnl *r, struct jbuf *out, bool pod, const struct read_scope *scope, char *msg,
                   size_t len) {
  size_t start = out->len;
  for (int attempt = 1;; attempt++) {
    int rc = once(r, out, pod, scope, msg, len);
    if (rc == 0) return 0;
    if (rc == TOO_MANY) return DUMP_TOO_LARGE;
    if (rc != -EINTR || attempt == NETLINK_DUMP_ATTEMPTS) return DUMP_FAILED;
    out->len = start;
    if (out->data != NULL) out->data[start] = '\0';
  }
}
