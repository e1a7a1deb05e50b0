/* What the dump files share: the links seen so far (names by index), the answer being built, the
 * filters and bound of the read, and the attribute and formatting helpers. Private to dump*.c. */
#ifndef VPCNET_NETLINK_DUMP_VIEW_H
#define VPCNET_NETLINK_DUMP_VIEW_H

#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "dump.h"
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

/* Raw messages kept for a second pass (addresses, listed under their link). */
struct raw {
  char *data;
  size_t len, cap;
};

/* Messages the kernel sent, whether kept or dropped (the answer's "received"). */
struct counts {
  size_t links, addresses, routes, rules, neighbours;
};

/* An object a callback keeps beyond the bound: the read is refused (not an errno). */
#define TOO_MANY (-100000)

struct dump {
  struct jbuf *out;
  struct links links;
  /* The addresses of the links read, for emit_link. */
  struct raw addrs;
  int first;
  struct counts received;
  /* A pod's namespace: at most `bound` objects kept in one step (0: no bound); `kept` so far. */
  size_t bound, kept;
  /* The step, in ip's words for an error ("route show table main dev eth0"), and as a refusal
     names what there is too much of ("routes (table main, dev eth0)"). */
  char step[64], kind[64];
  /* What the helper keeps whatever the kernel sent (0 or NULL: everything): objects of this family,
     addresses and neighbours of this link, routes of this table through this link, rules at the
     scope's priorities. The kernel has left out the rest already where it honours filters. */
  unsigned char family;
  int ifindex;
  uint32_t table;
  const struct read_scope *scope;
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
/* One more object kept in this step: 0, or TOO_MANY past the bound. */
int keep(struct dump *d);
/* A new step of the read: its names, and a fresh count against the bound. */
void step(struct dump *d, const char *ip_words, const char *kind);
/* Starts a dump request of `type` for `family`, its family header otherwise zero (no filter yet);
   returns that header, for the caller's filters. */
void *dump_request(struct rtnl_msg *m, uint16_t type, unsigned char family);
/* Appends a copy of the message; -ENOMEM when it cannot. */
int raw_append(struct raw *r, const struct nlmsghdr *h);
void each_raw(const struct raw *r, rtnl_each each, void *ctx);
/* The link's index, or 0 when the read has not seen it. */
int index_of(const struct dump *d, const char *name);

/* rtnl_each callbacks: dump-links.c */
int collect_link(const struct nlmsghdr *h, void *ctx);
int keep_addr(const struct nlmsghdr *h, void *ctx);
int emit_link(const struct nlmsghdr *h, void *ctx);
/* rtnl_each callbacks: dump-routing.c */
int emit_route(const struct nlmsghdr *h, void *ctx);
int emit_rule(const struct nlmsghdr *h, void *ctx);
int emit_neighbour(const struct nlmsghdr *h, void *ctx);

/* dump-scoped.c: one attempt at a pod's namespace within `scope`; 0 or a negative errno/TOO_MANY
   with d->step naming the step that failed. */
int dump_scoped(struct rtnl *r, struct dump *d, const struct read_scope *scope);

#endif
