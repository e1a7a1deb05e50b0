/* What the dump files share: the links seen so far (names by index), the answer being built, and
 * the attribute and formatting helpers. Private to dump*.c. */
#ifndef VPCNET_NETLINK_DUMP_VIEW_H
#define VPCNET_NETLINK_DUMP_VIEW_H

#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>

#include "jbuf.h"
#include "rtnl.h"

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

/* Raw messages kept for a second pass (addresses, listed under their link). */
struct raw {
  char *data;
  size_t len, cap;
};

struct link_ctx {
  struct dump *d;
  const struct raw *addrs;
};

struct flag_name {
  unsigned int bit;
  const char *name;
};

void attrs(const void *start, size_t len, const struct rtattr **tb, int max);
uint32_t u32_of(const struct rtattr *a);
const char *name_of(const struct dump *d, int index, char fallback[IFNAMSIZ + 8]);
void comma(struct dump *d);
void key_addr(struct jbuf *b, const char *key, int family, const struct rtattr *a);
const char *table_name(uint32_t t, char buf[16]);

/* rtnl_each callbacks: dump-links.c */
int collect_link(const struct nlmsghdr *h, void *ctx);
int keep_raw(const struct nlmsghdr *h, void *ctx);
int emit_link(const struct nlmsghdr *h, void *ctx);
/* rtnl_each callbacks: dump-routing.c */
int emit_route(const struct nlmsghdr *h, void *ctx);
int emit_rule(const struct nlmsghdr *h, void *ctx);
int emit_neighbour(const struct nlmsghdr *h, void *ctx);

#endif
