/* Routes, rules and neighbours, as `ip -d -j route show table all`, `rule show`, `neigh show`. */
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

/* --- routes, IPv4 and IPv6, every table but local --- */

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

int emit_route(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWROUTE) return 0;
  d->received.routes++;
  const struct rtmsg *rt = NLMSG_DATA(h);
  int family = rt->rtm_family;
  if ((family != AF_INET && family != AF_INET6) || (rt->rtm_flags & RTM_F_CLONED)) return 0;
  if (d->family != 0 && family != d->family) return 0;
  const struct rtattr *tb[RTA_MAX + 1];
  attrs(RTM_RTA(rt), RTM_PAYLOAD(h), tb, RTA_MAX);
  uint32_t table = tb[RTA_TABLE] != NULL ? u32_of(tb[RTA_TABLE]) : rt->rtm_table;
  if (table == RT_TABLE_LOCAL || (d->table != 0 && table != d->table)) return 0;
  if (d->ifindex != 0 && (tb[RTA_OIF] == NULL || (int)u32_of(tb[RTA_OIF]) != d->ifindex)) return 0;
  int rc = keep(d);
  if (rc < 0) return rc;
  comma(d);
  char text[INET6_ADDRSTRLEN] = "";
  if (tb[RTA_DST] != NULL) inet_ntop(family, RTA_DATA(tb[RTA_DST]), text, sizeof text);
  /* As ip: a host route's destination without its length. */
  if (rt->rtm_dst_len == 0)
    jbuf_raw(b, "{\"dst\":\"default\"");
  else if (rt->rtm_dst_len == (family == AF_INET6 ? 128 : 32))
    jbuf_printf(b, "{\"dst\":\"%s\"", text);
  else
    jbuf_printf(b, "{\"dst\":\"%s/%u\"", text, rt->rtm_dst_len);
  if (tb[RTA_GATEWAY] != NULL) key_addr(b, "gateway", family, tb[RTA_GATEWAY]);
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

/* No kernel filters rule dumps by priority: the helper keeps those at the scope's own. */
static bool in_scope(const struct read_scope *scope, uint32_t priority) {
  for (int i = 0; i < scope->nrules; i++)
    if (scope->priorities[i] == priority) return true;
  return false;
}

int emit_rule(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWRULE) return 0;
  d->received.rules++;
  const struct fib_rule_hdr *frh = NLMSG_DATA(h);
  if (frh->family != AF_INET) return 0;
  const struct rtattr *tb[FRA_MAX + 1];
  size_t len = h->nlmsg_len - NLMSG_LENGTH(sizeof *frh);
  attrs((const char *)frh + NLMSG_ALIGN(sizeof *frh), len, tb, FRA_MAX);
  uint32_t priority = tb[FRA_PRIORITY] != NULL ? u32_of(tb[FRA_PRIORITY]) : 0;
  if (d->scope != NULL && !in_scope(d->scope, priority)) return 0;
  int rc = keep(d);
  if (rc < 0) return rc;
  comma(d);
  jbuf_printf(b, "{\"priority\":%u", priority);
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

int emit_neighbour(const struct nlmsghdr *h, void *ctx) {
  struct dump *d = ctx;
  struct jbuf *b = d->out;
  if (h->nlmsg_type != RTM_NEWNEIGH) return 0;
  d->received.neighbours++;
  const struct ndmsg *nd = NLMSG_DATA(h);
  if (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) return 0;
  if (!(nd->ndm_state & (0xFF & ~NUD_NOARP)) && !(nd->ndm_flags & (NTF_PROXY | NTF_EXT_LEARNED))) return 0;
  if (d->ifindex != 0 && nd->ndm_ifindex != d->ifindex) return 0;
  const struct rtattr *tb[NDA_MAX + 1];
  attrs((const char *)nd + NLMSG_ALIGN(sizeof *nd), h->nlmsg_len - NLMSG_LENGTH(sizeof *nd), tb, NDA_MAX);
  if (tb[NDA_DST] == NULL) return 0;
  int rc = keep(d);
  if (rc < 0) return rc;
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
