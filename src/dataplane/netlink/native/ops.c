/* Each operation builds the message `ip` would send for its line in opText (kernel-op.ts), so the
 * kernel sees the same request and answers with the same errors. */
#define _GNU_SOURCE
#include "ops.h"

#include "link-del.h"
#include "nft-set.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 10

struct args {
  char *tok[MAX_TOKENS];
  int n;
};

static void split(char *line, struct args *a) {
  a->n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " ", &save); t != NULL && a->n < MAX_TOKENS; t = strtok_r(NULL, " ", &save))
    a->tok[a->n++] = t;
}

static bool absent(const char *t) { return strcmp(t, "-") == 0; }

static int fail(char *msg, size_t len, const char *fmt, const char *arg) {
  snprintf(msg, len, fmt, arg);
  return -1;
}

/* ip's words for a kernel error, with the kernel's own reason when it gave one. */
static int kernel_said(const struct rtnl *r, int rc, char *msg, size_t len) {
  if (rc == 0) return 0;
  if (r->why[0] != '\0')
    snprintf(msg, len, "RTNETLINK answers: %s (%s)", strerror(-rc), r->why);
  else
    snprintf(msg, len, "RTNETLINK answers: %s", strerror(-rc));
  return -1;
}

static int parse_u32(const char *t, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(t, &end, 10);
  if (errno != 0 || *end != '\0' || end == t || v > UINT32_MAX) return -1;
  *out = (uint32_t)v;
  return 0;
}

static int parse_mac(const char *t, unsigned char mac[6]) {
  unsigned int b[6];
  char extra;
  if (sscanf(t, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &extra) != 6) return -1;
  for (int i = 0; i < 6; i++) mac[i] = (unsigned char)b[i];
  return 0;
}

/* An address of either family: `len` bytes of `bytes` (4 or 16); AF_UNSPEC for "default". */
struct ip_addr {
  int family;
  size_t len;
  unsigned char bytes[16];
  unsigned char plen;
};

/* "a.b.c.d[/n]", "x:y::z[/n]" or "default" (AF_UNSPEC, length 0). */
static int parse_prefix(const char *t, struct ip_addr *a) {
  memset(a, 0, sizeof *a);
  if (strcmp(t, "default") == 0) {
    a->family = AF_UNSPEC;
    return 0;
  }
  char buf[INET6_ADDRSTRLEN + 5];
  if (strlen(t) >= sizeof buf) return -1;
  strcpy(buf, t);
  char *slash = strchr(buf, '/');
  if (slash != NULL) *slash = '\0';
  a->family = strchr(buf, ':') != NULL ? AF_INET6 : AF_INET;
  a->len = a->family == AF_INET6 ? 16 : 4;
  uint32_t max = a->family == AF_INET6 ? 128 : 32, n = max;
  if (slash != NULL && (parse_u32(slash + 1, &n) < 0 || n > max)) return -1;
  if (inet_pton(a->family, buf, a->bytes) != 1) return -1;
  a->plen = (unsigned char)n;
  return 0;
}

/* A bare address (no prefix length, not "default"). */
static int parse_ip(const char *t, struct ip_addr *a) {
  if (strchr(t, '/') != NULL || parse_prefix(t, a) < 0 || a->family == AF_UNSPEC) return -1;
  return 0;
}

/* ip resolves a device name before it asks the kernel, and says so when there is none. */
static int device(const char *name, int *index, char *msg, size_t len) {
  unsigned int i = if_nametoindex(name);
  if (i == 0) return fail(msg, len, "Cannot find device \"%s\"", name);
  *index = (int)i;
  return 0;
}

#define BAD(what) fail(msg, len, "invalid request: %s", what)

static int veth_add(struct rtnl *r, struct args *a, int node_ns_fd, char *msg, size_t len) {
  /* vethAdd name mac|- mtu peer peerMac */
  unsigned char mac[6], peer_mac[6];
  uint32_t mtu;
  if (a->n != 6 || parse_u32(a->tok[3], &mtu) < 0 || parse_mac(a->tok[5], peer_mac) < 0) return BAD(a->tok[0]);
  bool has_mac = !absent(a->tok[2]);
  if (has_mac && parse_mac(a->tok[2], mac) < 0) return BAD("vethAdd mac");
  struct rtnl_msg m;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  rtnl_start(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof ifi);
  rtnl_attr_str(&m, IFLA_IFNAME, a->tok[1]);
  rtnl_attr_u32(&m, IFLA_MTU, mtu);
  if (has_mac) rtnl_attr(&m, IFLA_ADDRESS, mac, 6);
  struct nlattr *info = rtnl_nest_begin(&m, IFLA_LINKINFO);
  rtnl_attr_str(&m, IFLA_INFO_KIND, "veth");
  struct nlattr *data = rtnl_nest_begin(&m, IFLA_INFO_DATA);
  struct nlattr *peer = rtnl_nest_begin(&m, VETH_INFO_PEER);
  rtnl_reserve(&m, sizeof(struct ifinfomsg));
  rtnl_attr_str(&m, IFLA_IFNAME, a->tok[4]);
  rtnl_attr_u32(&m, IFLA_MTU, mtu);
  rtnl_attr(&m, IFLA_ADDRESS, peer_mac, 6);
  rtnl_attr_u32(&m, IFLA_NET_NS_FD, (uint32_t)node_ns_fd);
  rtnl_nest_end(&m, peer);
  rtnl_nest_end(&m, data);
  rtnl_nest_end(&m, info);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

static int trunk_device_add(struct rtnl *r, struct args *a, char *msg, size_t len) {
  /* trunkDeviceAdd name parent mac mtu vlanId vlan|macvlan */
  unsigned char mac[6];
  uint32_t mtu, vlan;
  if (a->n != 7 || parse_mac(a->tok[3], mac) < 0 || parse_u32(a->tok[4], &mtu) < 0 ||
      parse_u32(a->tok[5], &vlan) < 0 || vlan < 1 || vlan > 4094)
    return BAD(a->tok[0]);
  bool is_vlan = strcmp(a->tok[6], "vlan") == 0;
  if (!is_vlan && strcmp(a->tok[6], "macvlan") != 0) return BAD("trunk driver");
  int parent;
  if (device(a->tok[2], &parent, msg, len) < 0) return -1;
  struct rtnl_msg m;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
  rtnl_start(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof ifi);
  rtnl_attr_u32(&m, IFLA_LINK, (uint32_t)parent);
  rtnl_attr_str(&m, IFLA_IFNAME, a->tok[1]);
  rtnl_attr(&m, IFLA_ADDRESS, mac, 6);
  rtnl_attr_u32(&m, IFLA_MTU, mtu);
  struct nlattr *info = rtnl_nest_begin(&m, IFLA_LINKINFO);
  rtnl_attr_str(&m, IFLA_INFO_KIND, is_vlan ? "vlan" : "macvlan");
  struct nlattr *data = rtnl_nest_begin(&m, IFLA_INFO_DATA);
  if (is_vlan)
    rtnl_attr_u16(&m, IFLA_VLAN_ID, (uint16_t)vlan);
  else
    rtnl_attr_u32(&m, IFLA_MACVLAN_MODE, MACVLAN_MODE_PRIVATE);
  rtnl_nest_end(&m, data);
  rtnl_nest_end(&m, info);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

static int link_up(struct rtnl *r, struct args *a, char *msg, size_t len) {
  /* linkUp dev mtu|- */
  uint32_t mtu = 0;
  if (a->n != 3 || (!absent(a->tok[2]) && parse_u32(a->tok[2], &mtu) < 0)) return BAD(a->tok[0]);
  int index;
  if (device(a->tok[1], &index, msg, len) < 0) return -1;
  struct rtnl_msg m;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index, .ifi_flags = IFF_UP, .ifi_change = IFF_UP};
  rtnl_start(&m, RTM_NEWLINK, 0, &ifi, sizeof ifi);
  if (!absent(a->tok[2])) rtnl_attr_u32(&m, IFLA_MTU, mtu);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

static int link_del(struct rtnl *r, struct args *a, char *msg, size_t len) {
  /* linkDel dev */
  if (a->n != 2) return BAD(a->tok[0]);
  int index;
  if (device(a->tok[1], &index, msg, len) < 0) return -1;
  struct rtnl_msg m;
  struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = index};
  rtnl_start(&m, RTM_DELLINK, 0, &ifi, sizeof ifi);
  /* Answered at the kernel's announcement of the deletion, not its ack (link-del.c). */
  return kernel_said(r, link_del_announced(r, &m, index), msg, len);
}

static int addr(struct rtnl *r, struct args *a, bool add, char *msg, size_t len) {
  /* addrAdd dev cidr replace(0|1) nodad(0|1)  /  addrDel dev cidr */
  struct ip_addr ip;
  if (a->n != (add ? 5 : 3) || parse_prefix(a->tok[2], &ip) < 0 || ip.family == AF_UNSPEC) return BAD(a->tok[0]);
  bool replace = add && strcmp(a->tok[3], "1") == 0;
  bool nodad = add && strcmp(a->tok[4], "1") == 0;
  if (nodad && ip.family != AF_INET6) return BAD("nodad on an IPv4 address");
  int index;
  if (device(a->tok[1], &index, msg, len) < 0) return -1;
  struct rtnl_msg m;
  struct ifaddrmsg ifa = {.ifa_family = (unsigned char)ip.family, .ifa_prefixlen = ip.plen, .ifa_index = (uint32_t)index};
  /* ip gives loopback addresses host scope, every other one global (0). */
  if (add && ip.family == AF_INET && ip.bytes[0] == 127) ifa.ifa_scope = RT_SCOPE_HOST;
  if (nodad) ifa.ifa_flags = IFA_F_NODAD;
  uint16_t flags = add ? (uint16_t)(NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL)) : 0;
  rtnl_start(&m, add ? RTM_NEWADDR : RTM_DELADDR, flags, &ifa, sizeof ifa);
  rtnl_attr(&m, IFA_LOCAL, ip.bytes, ip.len);
  /* ip sends IFA_ADDRESS for IPv4 only (for IPv6 it would name a peer). */
  if (ip.family == AF_INET) rtnl_attr(&m, IFA_ADDRESS, ip.bytes, ip.len);
  if (nodad) rtnl_attr_u32(&m, IFA_FLAGS, IFA_F_NODAD);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

static void route_table(struct rtnl_msg *m, struct rtmsg *rt, uint32_t table) {
  rt->rtm_table = table < 256 ? (unsigned char)table : RT_TABLE_UNSPEC;
  rtnl_attr_u32(m, RTA_TABLE, table);
}

static int route(struct rtnl *r, struct args *a, bool add, char *msg, size_t len) {
  /* routeAdd dst dev via|- table scopeLink(0|1) metric|- replace(0|1)  /  routeDel dst dev table */
  struct ip_addr dst, via;
  uint32_t table, metric = 0;
  if (a->n != (add ? 8 : 4) || parse_prefix(a->tok[1], &dst) < 0) return BAD(a->tok[0]);
  if (parse_u32(a->tok[add ? 4 : 3], &table) < 0) return BAD("route table");
  bool has_via = add && !absent(a->tok[3]);
  if (has_via && parse_ip(a->tok[3], &via) < 0) return BAD("route via");
  /* "default" takes its family from the gateway (as ip does), IPv4 without one. */
  int family = dst.family != AF_UNSPEC ? dst.family : has_via ? via.family : AF_INET;
  if (has_via && via.family != family) return BAD("route via of another address family");
  bool has_metric = add && !absent(a->tok[6]);
  if (has_metric && parse_u32(a->tok[6], &metric) < 0) return BAD("route metric");
  bool scope_link = add && strcmp(a->tok[5], "1") == 0;
  bool replace = add && strcmp(a->tok[7], "1") == 0;
  int index;
  if (device(a->tok[2], &index, msg, len) < 0) return -1;
  struct rtnl_msg m;
  struct rtmsg rt = {.rtm_family = (unsigned char)family, .rtm_dst_len = dst.plen};
  uint16_t flags = 0;
  if (add) {
    /* As ip: boot protocol, unicast; an IPv4 route without gateway (or asked for) has link scope,
       IPv6 routes universe scope (the kernel ignores theirs). */
    rt.rtm_protocol = RTPROT_BOOT;
    rt.rtm_type = RTN_UNICAST;
    rt.rtm_scope = family == AF_INET && (scope_link || !has_via) ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
    flags = (uint16_t)(NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL));
  } else {
    rt.rtm_scope = RT_SCOPE_NOWHERE;
  }
  struct rtmsg *hdr = rtnl_start(&m, add ? RTM_NEWROUTE : RTM_DELROUTE, flags, &rt, sizeof rt);
  route_table(&m, hdr, table);
  if (dst.plen > 0) rtnl_attr(&m, RTA_DST, dst.bytes, dst.len);
  if (has_via) rtnl_attr(&m, RTA_GATEWAY, via.bytes, via.len);
  rtnl_attr_u32(&m, RTA_OIF, (uint32_t)index);
  if (has_metric) rtnl_attr_u32(&m, RTA_PRIORITY, metric);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

static int neigh_add(struct rtnl *r, struct args *a, char *msg, size_t len) {
  /* neighAdd dev ip lladdr replace(0|1) */
  struct ip_addr ip;
  unsigned char mac[6];
  if (a->n != 5 || parse_ip(a->tok[2], &ip) < 0 || parse_mac(a->tok[3], mac) < 0) return BAD(a->tok[0]);
  bool replace = strcmp(a->tok[4], "1") == 0;
  int index;
  if (device(a->tok[1], &index, msg, len) < 0) return -1;
  struct rtnl_msg m;
  struct ndmsg nd = {.ndm_family = (unsigned char)ip.family, .ndm_ifindex = index, .ndm_state = NUD_PERMANENT};
  rtnl_start(&m, RTM_NEWNEIGH, (uint16_t)(NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL)), &nd, sizeof nd);
  rtnl_attr(&m, NDA_DST, ip.bytes, ip.len);
  rtnl_attr(&m, NDA_LLADDR, mac, 6);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

static int rule(struct rtnl *r, struct args *a, bool add, char *msg, size_t len) {
  /* ruleAdd|ruleDel priority from|- to|- iif|- table (IPv4 only: vpcnet makes no IPv6 rules) */
  uint32_t prio, table;
  struct ip_addr from = {0}, to = {0};
  if (a->n != 6 || parse_u32(a->tok[1], &prio) < 0 || parse_u32(a->tok[5], &table) < 0) return BAD(a->tok[0]);
  bool has_from = !absent(a->tok[2]), has_to = !absent(a->tok[3]), has_iif = !absent(a->tok[4]);
  if (has_from && (parse_prefix(a->tok[2], &from) < 0 || from.family != AF_INET)) return BAD("rule from");
  if (has_to && (parse_prefix(a->tok[3], &to) < 0 || to.family != AF_INET)) return BAD("rule to");
  if (has_iif && strlen(a->tok[4]) >= IFNAMSIZ) return BAD("rule iif");
  struct rtnl_msg m;
  struct fib_rule_hdr frh = {.family = AF_INET, .src_len = from.plen, .dst_len = to.plen};
  frh.table = table < 256 ? (unsigned char)table : RT_TABLE_UNSPEC;
  if (add) frh.action = FR_ACT_TO_TBL;
  uint16_t flags = add ? (uint16_t)(NLM_F_CREATE | NLM_F_EXCL) : 0;
  rtnl_start(&m, add ? RTM_NEWRULE : RTM_DELRULE, flags, &frh, sizeof frh);
  rtnl_attr_u32(&m, FRA_PRIORITY, prio);
  if (has_from) rtnl_attr(&m, FRA_SRC, from.bytes, 4);
  if (has_to) rtnl_attr(&m, FRA_DST, to.bytes, 4);
  if (has_iif) rtnl_attr_str(&m, FRA_IFNAME, a->tok[4]);
  rtnl_attr_u32(&m, FRA_TABLE, table);
  return kernel_said(r, rtnl_talk(r, &m), msg, len);
}

/* `snatAdd|snatDel <table> <set> <ip>`: membership of a pod address in vpcnet's SNAT set, over
   nfnetlink (nft-set.c). A missing element or set is "No such file or directory", which the
   agent counts as already gone for a removal, as it did with nft's own message. */
static int snat(struct args *a, bool add, char *msg, size_t len) {
  struct in_addr ip;
  if (a->n != 4 || inet_pton(AF_INET, a->tok[3], &ip) != 1) return BAD(a->tok[0]);
  int rc = nft_set_elements(add, a->tok[1], a->tok[2], &ip, 1);
  if (rc == 0) return 0;
  snprintf(msg, len, "nftables answers: %s", strerror(-rc));
  return -1;
}

int run_op(struct rtnl *r, char *line, int node_ns_fd, char *msg, size_t len) {
  struct args a;
  split(line, &a);
  if (a.n == 0) return BAD("empty operation");
  const char *op = a.tok[0];
  if (strcmp(op, "vethAdd") == 0) return veth_add(r, &a, node_ns_fd, msg, len);
  if (strcmp(op, "trunkDeviceAdd") == 0) return trunk_device_add(r, &a, msg, len);
  if (strcmp(op, "linkUp") == 0) return link_up(r, &a, msg, len);
  if (strcmp(op, "linkDel") == 0) return link_del(r, &a, msg, len);
  if (strcmp(op, "addrAdd") == 0) return addr(r, &a, true, msg, len);
  if (strcmp(op, "addrDel") == 0) return addr(r, &a, false, msg, len);
  if (strcmp(op, "routeAdd") == 0) return route(r, &a, true, msg, len);
  if (strcmp(op, "routeDel") == 0) return route(r, &a, false, msg, len);
  if (strcmp(op, "neighAdd") == 0) return neigh_add(r, &a, msg, len);
  if (strcmp(op, "ruleAdd") == 0) return rule(r, &a, true, msg, len);
  if (strcmp(op, "ruleDel") == 0) return rule(r, &a, false, msg, len);
  if (strcmp(op, "snatAdd") == 0) return snat(&a, true, msg, len);
  if (strcmp(op, "snatDel") == 0) return snat(&a, false, msg, len);
  return fail(msg, len, "invalid request: unknown operation %s", op);
}
