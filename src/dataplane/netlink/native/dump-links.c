/* Links with their addresses, as `ip -d -j addr show` prints them. */
#define _GNU_SOURCE
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

/* --- links: first the names (routes and addresses refer to indexes), then the JSON --- */

int collect_link(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  if (h->nlmsg_type != RTM_NEWLINK) return 0;
  d->received.links++;
  const struct ifinfomsg *ifi = NLMSG_DATA(h);
  const struct rtattr *tb[IFLA_MAX + 1];
  attrs(IFLA_RTA(ifi), IFLA_PAYLOAD(h), tb, IFLA_MAX);
  if (tb[IFLA_IFNAME] == NULL) return 0;
  int rc = keep(d);
  if (rc < 0) return rc;
  if (d->links.n == d->links.cap) {
    size_t cap = d->links.cap == 0 ? 32 : d->links.cap * 2;
    struct link *items = realloc(d->links.items, cap * sizeof *items);
    if (items == NULL) return -ENOMEM;
    d->links.items = items;
    d->links.cap = cap;
  }
  struct link *l = &d->links.items[d->links.n++];
  l->index = ifi->ifi_index;
  snprintf(l->name, sizeof l->name, "%s", (const char *)RTA_DATA(tb[IFLA_IFNAME]));
  return 0;
}

/* From linux/if.h, which cannot be included beside net/if.h. */
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP (1U << 16)
#define IFF_DORMANT (1U << 17)
#endif

static const struct flag_name FLAGS[] = {
    {IFF_LOOPBACK, "LOOPBACK"}, {IFF_BROADCAST, "BROADCAST"}, {IFF_POINTOPOINT, "POINTOPOINT"},
    {IFF_MULTICAST, "MULTICAST"}, {IFF_NOARP, "NOARP"}, {IFF_ALLMULTI, "ALLMULTI"},
    {IFF_PROMISC, "PROMISC"}, {IFF_MASTER, "MASTER"}, {IFF_SLAVE, "SLAVE"},
    {IFF_UP, "UP"}, {IFF_LOWER_UP, "LOWER_UP"}, {IFF_DORMANT, "DORMANT"},
};

/* The addresses of one link, as ip's addr_info. */
struct addr_ctx {
  struct jbuf *out;
  int index;
  int first;
};

static int emit_addr(const struct nlmsghdr *h, void *ctx) {
  struct addr_ctx *c = ctx;
  if (h->nlmsg_type != RTM_NEWADDR) return 0;
  const struct ifaddrmsg *ifa = NLMSG_DATA(h);
  if ((int)ifa->ifa_index != c->index) return 0;
  if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) return 0;
  const struct rtattr *tb[IFA_MAX + 1];
  attrs(IFA_RTA(ifa), IFA_PAYLOAD(h), tb, IFA_MAX);
  const struct rtattr *local = tb[IFA_LOCAL] != NULL ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  if (local == NULL) return 0;
  if (!c->first) jbuf_raw(c->out, ",");
  c->first = 0;
  jbuf_printf(c->out, "{\"family\":\"%s\"", ifa->ifa_family == AF_INET ? "inet" : "inet6");
  key_addr(c->out, "local", ifa->ifa_family, local);
  jbuf_printf(c->out, ",\"prefixlen\":%u}", ifa->ifa_prefixlen);
  return 0;
}

int raw_append(struct raw *r, const struct nlmsghdr *h) {
  if (r->len + h->nlmsg_len > r->cap) {
    size_t cap = r->cap == 0 ? 16384 : r->cap;
    while (cap < r->len + h->nlmsg_len) cap *= 2;
    char *d = realloc(r->data, cap);
    if (d == NULL) return -ENOMEM;
    r->data = d;
    r->cap = cap;
  }
  memcpy(r->data + r->len, h, h->nlmsg_len);
  r->len += NLMSG_ALIGN(h->nlmsg_len);
  return 0;
}

void each_raw(const struct raw *r, rtnl_each each, void *ctx) {
  size_t left = r->len;
  for (const struct nlmsghdr *h = (const struct nlmsghdr *)r->data; left > 0 && NLMSG_OK(h, left);
       h = NLMSG_NEXT(h, left))
    each(h, ctx);
}

/* Addresses are kept raw until their links are listed; only those of the link read, if one is. */
int keep_addr(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  if (h->nlmsg_type != RTM_NEWADDR) return 0;
  d->received.addresses++;
  const struct ifaddrmsg *ifa = NLMSG_DATA(h);
  if (d->family != 0 && ifa->ifa_family != d->family) return 0;
  if (d->ifindex != 0 && (int)ifa->ifa_index != d->ifindex) return 0;
  int rc = keep(d);
  return rc < 0 ? rc : raw_append(&d->addrs, h);
}

int emit_link(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWLINK) return 0;
  const struct ifinfomsg *ifi = NLMSG_DATA(h);
  const struct rtattr *tb[IFLA_MAX + 1];
  attrs(IFLA_RTA(ifi), IFLA_PAYLOAD(h), tb, IFLA_MAX);
  if (tb[IFLA_IFNAME] == NULL) return 0;
  comma(d);
  jbuf_printf(b, "{\"ifindex\":%d,", ifi->ifi_index);
  jbuf_key(b, "ifname");
  jbuf_str(b, RTA_DATA(tb[IFLA_IFNAME]));
  /* ip shows the peer's name only when it is in this namespace (no link-netnsid). */
  if (tb[IFLA_LINK] != NULL && u32_of(tb[IFLA_LINK]) != 0 && tb[IFLA_LINK_NETNSID] == NULL) {
    char fallback[IFNAMSIZ + 8];
    jbuf_raw(b, ",");
    jbuf_key(b, "link");
    jbuf_str(b, name_of(d, (int)u32_of(tb[IFLA_LINK]), fallback));
  }
  jbuf_raw(b, ",\"flags\":[");
  int n = 0;
  if ((ifi->ifi_flags & IFF_UP) && !(ifi->ifi_flags & IFF_RUNNING)) jbuf_printf(b, "%s\"NO-CARRIER\"", n++ ? "," : "");
  for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++)
    if (ifi->ifi_flags & FLAGS[i].bit) jbuf_printf(b, "%s\"%s\"", n++ ? "," : "", FLAGS[i].name);
  jbuf_raw(b, "]");
  if (tb[IFLA_MTU] != NULL) jbuf_printf(b, ",\"mtu\":%u", u32_of(tb[IFLA_MTU]));
  if (tb[IFLA_ADDRESS] != NULL) {
    const unsigned char *mac = RTA_DATA(tb[IFLA_ADDRESS]);
    size_t len = RTA_PAYLOAD(tb[IFLA_ADDRESS]);
    jbuf_raw(b, ",\"address\":\"");
    for (size_t i = 0; i < len; i++) jbuf_printf(b, "%s%02x", i ? ":" : "", mac[i]);
    jbuf_raw(b, "\"");
  }
  if (tb[IFLA_LINKINFO] != NULL) {
    const struct rtattr *info[IFLA_INFO_MAX + 1];
    attrs(RTA_DATA(tb[IFLA_LINKINFO]), RTA_PAYLOAD(tb[IFLA_LINKINFO]), info, IFLA_INFO_MAX);
    if (info[IFLA_INFO_KIND] != NULL) {
      const char *kind = RTA_DATA(info[IFLA_INFO_KIND]);
      jbuf_raw(b, ",\"linkinfo\":{");
      jbuf_key(b, "info_kind");
      jbuf_str(b, kind);
      if (strcmp(kind, "vlan") == 0 && info[IFLA_INFO_DATA] != NULL) {
        const struct rtattr *vlan[IFLA_VLAN_MAX + 1];
        attrs(RTA_DATA(info[IFLA_INFO_DATA]), RTA_PAYLOAD(info[IFLA_INFO_DATA]), vlan, IFLA_VLAN_MAX);
        if (vlan[IFLA_VLAN_ID] != NULL)
          jbuf_printf(b, ",\"info_data\":{\"id\":%u}", *(const uint16_t *)RTA_DATA(vlan[IFLA_VLAN_ID]));
      }
      jbuf_raw(b, "}");
    }
  }
  jbuf_raw(b, ",\"addr_info\":[");
  struct addr_ctx ac = {.out = b, .index = ifi->ifi_index, .first = 1};
  each_raw(&d->addrs, emit_addr, &ac);
  jbuf_raw(b, "]}");
  return 0;
}
