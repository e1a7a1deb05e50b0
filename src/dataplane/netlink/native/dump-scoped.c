/* A pod's namespace read within a scope (dump.h): only what vpcnet judges there, whatever else the
 * pod put in it. Where the kernel honours a filter (strict checking, 4.20 and later) it sends
 * nothing else: route dumps by table and outgoing link, address dumps by link (per family), and
 * neighbour dumps by link (NDA_IFINDEX, honoured without strict checking too); links are asked
 * for by name. Rule dumps cannot be filtered. Whatever the kernel sends, the helper keeps only
 * what the scope names while it reads (dump-view.h's filters), so on an older kernel the rest
 * costs reading, never memory; and no more than the bound of a kind. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dump-view.h"

/* The links the scope names, by name: each link's message kept raw, its name and index noted. */
struct named_links {
  struct dump *d;
  struct raw raw;
};

static int keep_named_link(const struct nlmsghdr *h, void *ctx) {
  struct named_links *nl = ctx;
  if (h->nlmsg_type != RTM_NEWLINK) return 0;
  int rc = collect_link(h, nl->d);
  return rc < 0 ? rc : raw_append(&nl->raw, h);
}

static int get_link(struct rtnl *r, const char *name, struct named_links *nl) {
  struct rtnl_msg m;
  rtnl_start(&m, RTM_GETLINK, 0, &(struct ifinfomsg){.ifi_family = AF_UNSPEC}, sizeof(struct ifinfomsg));
  rtnl_attr_str(&m, IFLA_IFNAME, name);
  int rc = rtnl_get(r, &m, keep_named_link, nl);
  /* A link the pod does not have is no error: the view lacks it, and the plan's checks say so. */
  return rc == -ENODEV ? 0 : rc;
}

/* Dumps of one family each: an AF_UNSPEC dump would ask every family, some of which (MPLS) refuse
   a table filter. A link or table that does not exist (ENODEV, ENOENT) holds nothing. */
static int dump_families(struct rtnl *r, struct dump *d, struct rtnl_msg *m, rtnl_each each) {
  static const unsigned char FAMILIES[] = {AF_INET, AF_INET6};
  for (size_t i = 0; i < sizeof FAMILIES; i++) {
    struct rtnl_msg copy = *m;
    /* Every family header begins with the family byte. */
    *(unsigned char *)NLMSG_DATA(&copy.u.hdr) = FAMILIES[i];
    d->family = FAMILIES[i];
    int rc = rtnl_dump(r, &copy, each, d);
    if (rc < 0 && rc != -ENODEV && rc != -ENOENT) {
      d->family = 0;
      return rc;
    }
  }
  d->family = 0;
  return 0;
}

/* A step about one link: "addr show dev eth0", "addresses (dev eth0)". */
static void link_step(struct dump *d, const char *ip_words, const char *kind, const char *dev) {
  char words[64], what[64];
  snprintf(words, sizeof words, "%s dev %s", ip_words, dev);
  snprintf(what, sizeof what, "%s (dev %s)", kind, dev);
  step(d, words, what);
}

static int dump_addresses(struct rtnl *r, struct dump *d, const struct link *l) {
  link_step(d, "addr show", "addresses", l->name);
  struct rtnl_msg m;
  struct ifaddrmsg *ifa = dump_request(&m, RTM_GETADDR, AF_UNSPEC);
  ifa->ifa_index = (uint32_t)l->index;
  d->ifindex = l->index;
  int rc = dump_families(r, d, &m, keep_addr);
  d->ifindex = 0;
  return rc;
}

static int dump_routes(struct rtnl *r, struct dump *d, uint32_t table, const char *dev) {
  int index = index_of(d, dev);
  if (index == 0) return 0;
  char ip_words[64], kind[64], buf[16];
  snprintf(ip_words, sizeof ip_words, "route show table %s dev %s", table_name(table, buf), dev);
  snprintf(kind, sizeof kind, "routes (table %s, dev %s)", table_name(table, buf), dev);
  step(d, ip_words, kind);
  struct rtnl_msg m;
  dump_request(&m, RTM_GETROUTE, AF_UNSPEC);
  rtnl_attr_u32(&m, RTA_TABLE, table);
  rtnl_attr_u32(&m, RTA_OIF, (uint32_t)index);
  d->table = table;
  d->ifindex = index;
  int rc = dump_families(r, d, &m, emit_route);
  d->table = 0;
  d->ifindex = 0;
  return rc;
}

static int dump_neighbours(struct rtnl *r, struct dump *d, const struct link *l) {
  link_step(d, "neigh show", "neighbours", l->name);
  struct rtnl_msg m;
  dump_request(&m, RTM_GETNEIGH, AF_UNSPEC);
  rtnl_attr_u32(&m, NDA_IFINDEX, (uint32_t)l->index);
  d->ifindex = l->index;
  int rc = rtnl_dump(r, &m, emit_neighbour, d);
  d->ifindex = 0;
  return rc;
}

static int dump_rules(struct rtnl *r, struct dump *d, const struct read_scope *scope) {
  if (scope->nrules == 0) return 0;
  step(d, "rule show", "rules");
  struct rtnl_msg m;
  dump_request(&m, RTM_GETRULE, AF_INET);
  d->scope = scope;
  int rc = rtnl_dump(r, &m, emit_rule, d);
  d->scope = NULL;
  return rc;
}

static int dump_scoped_parts(struct rtnl *r, struct dump *d, const struct read_scope *scope,
                             struct named_links *nl) {
  struct jbuf *out = d->out;
  int rc = 0;
  step(d, "link show", "links");
  for (int i = 0; i < scope->nlinks && rc == 0; i++) rc = get_link(r, scope->links[i], nl);
  for (size_t i = 0; i < d->links.n && rc == 0; i++) rc = dump_addresses(r, d, &d->links.items[i]);
  if (rc < 0) return rc;
  jbuf_raw(out, "\"links\":[");
  d->first = 1;
  each_raw(&nl->raw, emit_link, d);
  jbuf_raw(out, "],\"routes\":[");
  d->first = 1;
  for (int i = 0; i < scope->nroutes && rc == 0; i++)
    rc = dump_routes(r, d, scope->routes[i].table, scope->routes[i].dev);
  if (rc < 0) return rc;
  jbuf_raw(out, "],\"rules\":[");
  d->first = 1;
  rc = dump_rules(r, d, scope);
  if (rc < 0) return rc;
  jbuf_raw(out, "],\"neighbours\":[");
  d->first = 1;
  for (size_t i = 0; i < d->links.n && rc == 0; i++) rc = dump_neighbours(r, d, &d->links.items[i]);
  jbuf_raw(out, "]");
  return rc;
}

int dump_scoped(struct rtnl *r, struct dump *d, const struct read_scope *scope) {
  /* Older kernels cannot check strictly: their dumps ignore the filters, and the helper's own
     filtering does all the work. */
  if (dump_strict_check) (void)rtnl_strict_check(r);
  struct named_links nl = {.d = d};
  int rc = dump_scoped_parts(r, d, scope, &nl);
  free(nl.raw.data);
  return rc;
}
