/* Reads of a namespace, rendered with the key names and value forms of `ip -d -j` so the Linux
 * driver's parser (src/dataplane/linux/ip-json.ts) turns both into the same views. */
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

/* Dumps of a namespace that changed meanwhile are redone up to this many times in all. */
#define DUMP_ATTEMPTS 5

struct link {
  int index;
  char name[IFNAMSIZ];
};

struct links {
  struct link *items;
  size_t n, cap;
};

struct dump {
  struct jbuf *out;
  struct links links;
  int first;
};

/* Attributes of a message or a nest, by type (types beyond `max` are ignored). */
static void attrs(const void *start, size_t len, const struct rtattr **tb, int max) {
  memset(tb, 0, sizeof(*tb) * (size_t)(max + 1));
  for (const struct rtattr *a = start; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    int type = a->rta_type & ~NLA_F_NESTED;
    if (type <= max && tb[type] == NULL) tb[type] = a;
  }
}

static uint32_t u32_of(const struct rtattr *a) { return *(const uint32_t *)RTA_DATA(a); }

static const char *name_of(const struct dump *d, int index, char fallback[IFNAMSIZ + 8]) {
  for (size_t i = 0; i < d->links.n; i++)
    if (d->links.items[i].index == index) return d->links.items[i].name;
  snprintf(fallback, IFNAMSIZ + 8, "if%d", index);
  return fallback;
}

static void comma(struct dump *d) {
  if (!d->first) jbuf_raw(d->out, ",");
  d->first = 0;
}

static void key_addr(struct jbuf *b, const char *key, int family, const struct rtattr *a) {
  char text[INET6_ADDRSTRLEN];
  if (inet_ntop(family, RTA_DATA(a), text, sizeof text) == NULL) return;
  jbuf_raw(b, ",");
  jbuf_key(b, key);
  jbuf_str(b, text);
}

static const char *table_name(uint32_t t, char buf[16]) {
  if (t == RT_TABLE_MAIN) return "main";
  if (t == RT_TABLE_LOCAL) return "local";
  if (t == RT_TABLE_DEFAULT) return "default";
  snprintf(buf, 16, "%u", t);
  return buf;
}

/* --- links: first the names (routes and addresses refer to indexes), then the JSON --- */

static int collect_link(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  if (h->nlmsg_type != RTM_NEWLINK) return 0;
  const struct ifinfomsg *ifi = NLMSG_DATA(h);
  const struct rtattr *tb[IFLA_MAX + 1];
  attrs(IFLA_RTA(ifi), IFLA_PAYLOAD(h), tb, IFLA_MAX);
  if (tb[IFLA_IFNAME] == NULL) return 0;
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

struct flag_name {
  unsigned int bit;
  const char *name;
};

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

/* Addresses are kept as raw messages so each link can list its own. */
struct raw {
  char *data;
  size_t len, cap;
};

static int keep_raw(const struct nlmsghdr *h, void *ctx) {
  struct raw *r = ctx;
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

static void each_raw(const struct raw *r, rtnl_each each, void *ctx) {
  size_t left = r->len;
  for (const struct nlmsghdr *h = (const struct nlmsghdr *)r->data; left > 0 && NLMSG_OK(h, left);
       h = NLMSG_NEXT(h, left))
    each(h, ctx);
}

struct link_ctx {
  struct dump *d;
  const struct raw *addrs;
};

static int emit_link(const struct nlmsghdr *h, void *ctx) {
  struct link_ctx *lc = ctx;
  struct dump *d = lc->d;
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
  each_raw(lc->addrs, emit_addr, &ac);
  jbuf_raw(b, "]}");
  return 0;
}

/* --- routes, IPv4, every table but local --- */

static const char *scope_name(unsigned char s, char buf[16]) {
  switch (s) {
  case RT_SCOPE_UNIVERSE: return "global";
  case RT_SCOPE_SITE: return "site";
  case RT_SCOPE_LINK: return "link";
  case RT_SCOPE_HOST: return "host";
  case RT_SCOPE_NOWHERE: return "nowhere";
  default: snprintf(buf, 16, "%u", s); return buf;
  }
}

static int emit_route(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWROUTE) return 0;
  const struct rtmsg *rt = NLMSG_DATA(h);
  if (rt->rtm_family != AF_INET || (rt->rtm_flags & RTM_F_CLONED)) return 0;
  const struct rtattr *tb[RTA_MAX + 1];
  attrs(RTM_RTA(rt), RTM_PAYLOAD(h), tb, RTA_MAX);
  uint32_t table = tb[RTA_TABLE] != NULL ? u32_of(tb[RTA_TABLE]) : rt->rtm_table;
  if (table == RT_TABLE_LOCAL) return 0;
  comma(d);
  char text[INET_ADDRSTRLEN] = "";
  if (tb[RTA_DST] != NULL) inet_ntop(AF_INET, RTA_DATA(tb[RTA_DST]), text, sizeof text);
  if (rt->rtm_dst_len == 0)
    jbuf_raw(b, "{\"dst\":\"default\"");
  else if (rt->rtm_dst_len == 32)
    jbuf_printf(b, "{\"dst\":\"%s\"", text);
  else
    jbuf_printf(b, "{\"dst\":\"%s/%u\"", text, rt->rtm_dst_len);
  if (tb[RTA_GATEWAY] != NULL) key_addr(b, "gateway", AF_INET, tb[RTA_GATEWAY]);
  if (tb[RTA_OIF] != NULL) {
    char fallback[IFNAMSIZ + 8];
    jbuf_raw(b, ",");
    jbuf_key(b, "dev");
    jbuf_str(b, name_of(d, (int)u32_of(tb[RTA_OIF]), fallback));
  }
  char buf[16];
  jbuf_printf(b, ",\"table\":\"%s\"", table_name(table, buf));
  jbuf_printf(b, ",\"scope\":\"%s\"", scope_name(rt->rtm_scope, buf));
  if (tb[RTA_PRIORITY] != NULL) jbuf_printf(b, ",\"metric\":%u", u32_of(tb[RTA_PRIORITY]));
  jbuf_raw(b, "}");
  return 0;
}

/* --- rules: every selector or action the view does not model appears under a key of its own --- */

struct rule_attr_key {
  int type;
  const char *key;
};

/* Attributes that ip shows under these keys; FRA_PRIORITY, SRC, DST, IFNAME, TABLE are modeled. */
static const struct rule_attr_key RULE_OTHER[] = {
    {FRA_OIFNAME, "oif"},         {FRA_FWMARK, "fwmark"},     {FRA_FWMASK, "fwmask"},
    {FRA_FLOW, "realms"},          {FRA_TUN_ID, "tun_id"},     {FRA_SUPPRESS_IFGROUP, "suppress_ifgroup"},
    {FRA_SUPPRESS_PREFIXLEN, "suppress_prefixlen"}, {FRA_GOTO, "goto"}, {FRA_L3MDEV, "l3mdev"},
    {FRA_UID_RANGE, "uid_start"}, {FRA_IP_PROTO, "ipproto"}, {FRA_SPORT_RANGE, "sport"},
    {FRA_DPORT_RANGE, "dport"},
};

static int emit_rule(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWRULE) return 0;
  const struct fib_rule_hdr *frh = NLMSG_DATA(h);
  if (frh->family != AF_INET) return 0;
  const struct rtattr *tb[FRA_MAX + 1];
  size_t len = h->nlmsg_len - NLMSG_LENGTH(sizeof *frh);
  attrs((const char *)frh + NLMSG_ALIGN(sizeof *frh), len, tb, FRA_MAX);
  comma(d);
  jbuf_printf(b, "{\"priority\":%u", tb[FRA_PRIORITY] != NULL ? u32_of(tb[FRA_PRIORITY]) : 0);
  if (frh->flags & FIB_RULE_INVERT) jbuf_raw(b, ",\"not\":null");
  if (tb[FRA_SRC] != NULL) {
    key_addr(b, "src", AF_INET, tb[FRA_SRC]);
    if (frh->src_len != 32) jbuf_printf(b, ",\"srclen\":%u", frh->src_len);
  } else if (frh->src_len != 0) {
    jbuf_printf(b, ",\"src\":\"0.0.0.0\",\"srclen\":%u", frh->src_len);
  } else {
    jbuf_raw(b, ",\"src\":\"all\"");
  }
  if (tb[FRA_DST] != NULL) {
    key_addr(b, "dst", AF_INET, tb[FRA_DST]);
    if (frh->dst_len != 32) jbuf_printf(b, ",\"dstlen\":%u", frh->dst_len);
  }
  if (frh->tos != 0) jbuf_printf(b, ",\"tos\":%u", frh->tos);
  if (tb[FRA_IFNAME] != NULL) {
    jbuf_raw(b, ",");
    jbuf_key(b, "iif");
    jbuf_str(b, RTA_DATA(tb[FRA_IFNAME]));
    if (frh->flags & FIB_RULE_IIF_DETACHED) jbuf_raw(b, ",\"iif_detached\":null");
  }
  for (size_t i = 0; i < sizeof RULE_OTHER / sizeof RULE_OTHER[0]; i++) {
    const struct rtattr *a = tb[RULE_OTHER[i].type];
    if (a == NULL) continue;
    /* ip omits a full fwmask, as the kernel sends the suppress selectors on every rule with -1. */
    bool unset_when_full = RULE_OTHER[i].type == FRA_SUPPRESS_PREFIXLEN ||
                           RULE_OTHER[i].type == FRA_SUPPRESS_IFGROUP || RULE_OTHER[i].type == FRA_FWMASK;
    if (unset_when_full && u32_of(a) == UINT32_MAX) continue;
    jbuf_printf(b, ",\"%s\":null", RULE_OTHER[i].key);
  }
  uint32_t table = tb[FRA_TABLE] != NULL ? u32_of(tb[FRA_TABLE]) : frh->table;
  char buf[16];
  if (table != 0) jbuf_printf(b, ",\"table\":\"%s\"", table_name(table, buf));
  if (frh->action != FR_ACT_TO_TBL && frh->action != FR_ACT_GOTO) jbuf_printf(b, ",\"action\":%u", frh->action);
  if (tb[FRA_PROTOCOL] != NULL) jbuf_printf(b, ",\"protocol\":%u", *(const uint8_t *)RTA_DATA(tb[FRA_PROTOCOL]));
  jbuf_raw(b, "}");
  return 0;
}

/* --- neighbours, as `ip neigh show` lists them (no NOARP or state-less entries) --- */

static const struct flag_name NUD[] = {
    {NUD_INCOMPLETE, "INCOMPLETE"}, {NUD_REACHABLE, "REACHABLE"}, {NUD_STALE, "STALE"},
    {NUD_DELAY, "DELAY"},           {NUD_PROBE, "PROBE"},         {NUD_FAILED, "FAILED"},
    {NUD_NOARP, "NOARP"},           {NUD_PERMANENT, "PERMANENT"},
};

static int emit_neighbour(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWNEIGH) return 0;
  const struct ndmsg *nd = NLMSG_DATA(h);
  if (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) return 0;
  if (!(nd->ndm_state & (0xFF & ~NUD_NOARP)) && !(nd->ndm_flags & (NTF_PROXY | NTF_EXT_LEARNED))) return 0;
  const struct rtattr *tb[NDA_MAX + 1];
  attrs((const char *)nd + NLMSG_ALIGN(sizeof *nd), h->nlmsg_len - NLMSG_LENGTH(sizeof *nd), tb, NDA_MAX);
  if (tb[NDA_DST] == NULL) return 0;
  comma(d);
  jbuf_raw(b, "{");
  jbuf_key(b, "dst");
  char text[INET6_ADDRSTRLEN];
  inet_ntop(nd->ndm_family, RTA_DATA(tb[NDA_DST]), text, sizeof text);
  jbuf_str(b, text);
  char fallback[IFNAMSIZ + 8];
  jbuf_raw(b, ",");
  jbuf_key(b, "dev");
  jbuf_str(b, name_of(d, nd->ndm_ifindex, fallback));
  if (tb[NDA_LLADDR] != NULL) {
    const unsigned char *mac = RTA_DATA(tb[NDA_LLADDR]);
    jbuf_raw(b, ",\"lladdr\":\"");
    for (size_t i = 0; i < RTA_PAYLOAD(tb[NDA_LLADDR]); i++) jbuf_printf(b, "%s%02x", i ? ":" : "", mac[i]);
    jbuf_raw(b, "\"");
  }
  jbuf_raw(b, ",\"state\":[");
  int n = 0;
  for (size_t i = 0; i < sizeof NUD / sizeof NUD[0]; i++)
    if (nd->ndm_state & NUD[i].bit) jbuf_printf(b, "%s\"%s\"", n++ ? "," : "", NUD[i].name);
  jbuf_raw(b, "]}");
  return 0;
}

static int request_dump(struct rtnl *r, uint16_t type, unsigned char family, rtnl_each each, void *ctx) {
  struct rtnl_msg m;
  struct rtgenmsg g = {.rtgen_family = family};
  /* rtmsg/ifinfomsg/ndmsg/fib_rule_hdr all begin with the family; a full-size header is accepted. */
  struct {
    struct rtgenmsg g;
    char pad[sizeof(struct ifinfomsg) - sizeof(struct rtgenmsg)];
  } hdr = {.g = g};
  rtnl_start(&m, type, 0, &hdr, sizeof hdr);
  return rtnl_dump(r, &m, each, ctx);
}

static int failed(const char *what, int rc, char *msg, size_t len) {
  if (rc == -EINTR)
    snprintf(msg, len, "%s: the namespace kept changing during %d dumps", what, DUMP_ATTEMPTS);
  else
    snprintf(msg, len, "%s: RTNETLINK answers: %s", what, strerror(-rc));
  return -1;
}

/* One attempt; -EINTR when a dump was interrupted by a change. */
static int dump_once(struct rtnl *r, struct jbuf *out, int with_neighbours, char *msg, size_t len);

int dump_namespace(struct rtnl *r, struct jbuf *out, int with_neighbours, char *msg, size_t len) {
  size_t start = out->len;
  for (int attempt = 1;; attempt++) {
    int rc = dump_once(r, out, with_neighbours, msg, len);
    if (rc != -EINTR || attempt == DUMP_ATTEMPTS) return rc < 0 ? -1 : 0;
    out->len = start;
    if (out->data != NULL) out->data[start] = '\0';
  }
}

static int dump_once(struct rtnl *r, struct jbuf *out, int with_neighbours, char *msg, size_t len) {
  struct dump d = {.out = out};
  struct raw addrs = {0};
  int rc = request_dump(r, RTM_GETLINK, AF_UNSPEC, collect_link, &d);
  if (rc == 0) rc = request_dump(r, RTM_GETADDR, AF_UNSPEC, keep_raw, &addrs);
  if (rc < 0) {
    free(d.links.items);
    free(addrs.data);
    failed("addr show", rc, msg, len);
    return rc;
  }
  struct link_ctx lc = {.d = &d, .addrs = &addrs};
  const char *step = "addr show";
  jbuf_raw(out, "\"links\":[");
  d.first = 1;
  rc = request_dump(r, RTM_GETLINK, AF_UNSPEC, emit_link, &lc);
  if (rc == 0) {
    step = "route show table all";
    jbuf_raw(out, "],\"routes\":[");
    d.first = 1;
    rc = request_dump(r, RTM_GETROUTE, AF_INET, emit_route, &d);
  }
  if (rc == 0) {
    step = "rule show";
    jbuf_raw(out, "],\"rules\":[");
    d.first = 1;
    rc = request_dump(r, RTM_GETRULE, AF_INET, emit_rule, &d);
  }
  if (rc == 0 && with_neighbours) {
    step = "neigh show";
    jbuf_raw(out, "],\"neighbours\":[");
    d.first = 1;
    rc = request_dump(r, RTM_GETNEIGH, AF_UNSPEC, emit_neighbour, &d);
  }
  jbuf_raw(out, "]");
  free(d.links.items);
  free(addrs.data);
  if (rc < 0) failed(step, rc, msg, len);
  return rc;
}
