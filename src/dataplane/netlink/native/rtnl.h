/* One rtnetlink conversation in the calling thread's network namespace: a socket, a message
 * builder with nested attributes, and a request that waits for the kernel's acknowledgement. */
#ifndef VPCNET_NETLINK_RTNL_H
#define VPCNET_NETLINK_RTNL_H

#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

#define RTNL_MSG_MAX 1024

/* A dump the kernel marks interrupted (NLM_F_DUMP_INTR: the objects changed while they were sent)
 * is read again from the start, up to this many times in all: its answer may lack objects or hold
 * stale ones, and a reconcile pass must never judge such a view. */
#define NETLINK_DUMP_ATTEMPTS 5

/* A request being built: the netlink header, the family header, then attributes. */
struct rtnl_msg {
  union {
    struct nlmsghdr hdr;
    char bytes[RTNL_MSG_MAX];
  } u;
};

struct rtnl {
  int fd;
  uint32_t seq;
  /* The kernel's own words for the last error (extended ack), or "" when it gave none. */
  char why[256];
};

/* Opens NETLINK_ROUTE in the thread's current namespace; -errno on failure. */
int rtnl_open(struct rtnl *r);
void rtnl_close(struct rtnl *r);

/* Starts a message of `type` with `flags` (NLM_F_REQUEST added) and a family header of `len` bytes. */
void *rtnl_start(struct rtnl_msg *m, uint16_t type, uint16_t flags, const void *family_hdr, size_t len);
void rtnl_attr(struct rtnl_msg *m, uint16_t type, const void *data, size_t len);
void rtnl_attr_u16(struct rtnl_msg *m, uint16_t type, uint16_t v);
void rtnl_attr_u32(struct rtnl_msg *m, uint16_t type, uint32_t v);
void rtnl_attr_str(struct rtnl_msg *m, uint16_t type, const char *s);
/* Nested attributes: rtnl_nest_end closes what rtnl_nest_begin opened. */
struct nlattr *rtnl_nest_begin(struct rtnl_msg *m, uint16_t type);
void rtnl_nest_end(struct rtnl_msg *m, struct nlattr *nest);
/* Reserves `len` bytes of payload inside the current nest (a family header of a nested message). */
void *rtnl_reserve(struct rtnl_msg *m, size_t len);

/* Sends with NLM_F_ACK and waits for the answer: 0, or -errno as the kernel said it. */
int rtnl_talk(struct rtnl *r, struct rtnl_msg *m);

/* Sends a dump request; calls `each` for every message of the answer. 0, or -errno (-EINTR: the
 * kernel says the objects changed during the dump, so it may be inconsistent). A negative value
 * from `each` ends the reading at once and is returned: the rest of the dump stays unread, so the
 * socket serves no further request (close it). */
typedef int (*rtnl_each)(const struct nlmsghdr *h, void *ctx);
int rtnl_dump(struct rtnl *r, struct rtnl_msg *m, rtnl_each each, void *ctx);

/* Sends a get request (one object, with NLM_F_ACK); calls `each` for its answer. 0, or -errno. */
int rtnl_get(struct rtnl *r, struct rtnl_msg *m, rtnl_each each, void *ctx);

/* Asks the kernel to check get and dump requests strictly, which makes it honour their filters
 * (4.20 and later); -errno where it cannot (older kernels: they ignore the filters). */
int rtnl_strict_check(struct rtnl *r);

#endif
